#!/usr/bin/env python3
"""The network benchmark's results as an SVG chart: server CPU per request, grouped by
shape, one bar per server, each labelled with its ratio to the mio floor.

    benches/net/chart.py RESULTS.tsv OUT.svg

`benches/net/run.sh` calls it after every run (and with `--report`), so the committed
chart (`docs/benchmarks.svg`) is always drawn from the results the tables come from.
Reads the same columns the tables do: per (shape, server), the CPU ticks of every
measured window summed and divided by the requests answered in them. No dependencies
beyond the standard library.
"""

import sys
from collections import OrderedDict
from xml.sax.saxutils import escape

SHAPE_LABELS = {
    "echo-64": "echo 64 B, closed loop",
    "echo-1k": "echo 1 KiB, closed loop",
    "echo-64-rate": "echo 64 B, 50k req/s",
    "echo-1k-rate": "echo 1 KiB, 50k req/s",
    "http-wrk": "HTTP, wrk closed loop",
    "http-rate": "HTTP, 50k req/s",
    "http": "HTTP, closed loop",
}
# One colour per server, the floors in greys so the runtimes stand out.
COLOURS = {
    "mio": "#9e9e9e",
    "futures-floor": "#cfcfcf",
    "netloop": "#1f77b4",
    "tokio-mt": "#ff7f0e",
    "tokio-ct-reuseport": "#ffbb78",
    "smol": "#2ca02c",
    "netloop-uring": "#17becf",
    "monoio": "#d62728",
}
SERVER_LABELS = {
    "mio": "mio loop (floor)",
    "futures-floor": "futures floor",
    "netloop": "netloop",
    "tokio-mt": "tokio multi_thread",
    "tokio-ct-reuseport": "tokio per core (reuseport)",
    "smol": "smol",
    "netloop-uring": "netloop on io_uring",
    "monoio": "monoio (io_uring)",
}


def read(path, tck):
    """CPU µs per request, per shape and server, in the order first seen."""
    ticks, reqs = OrderedDict(), OrderedDict()
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) < len(header) or row[col["round"]] == "0":
                continue  # round 0 is the separate syscall-counting run
            shape, server = row[col["shape"]], row[col["server"]]
            ticks.setdefault(shape, OrderedDict()).setdefault(server, 0)
            reqs.setdefault(shape, OrderedDict()).setdefault(server, 0)
            ticks[shape][server] += int(row[col["cpu_ticks"]])
            reqs[shape][server] += int(row[col["requests"]])
    cpu = OrderedDict()
    for shape, servers in ticks.items():
        cpu[shape] = OrderedDict(
            (s, t / tck * 1e6 / reqs[shape][s]) for s, t in servers.items() if reqs[shape][s] > 0
        )
    return cpu


def svg(cpu, title):
    servers = []
    for per in cpu.values():
        for s in per:
            if s not in servers:
                servers.append(s)
    bar, gap, group_gap = 16, 2, 28
    left, top, plot_h = 60, 70, 260
    group_w = len(servers) * (bar + gap) - gap
    width = left + len(cpu) * (group_w + group_gap) + 20
    height = top + plot_h + 70
    peak = max(v for per in cpu.values() for v in per.values())
    # µs, a multiple of 2 that leaves room above the highest bar for its ratio label.
    scale_max = (int(peak * 1.12 / 2) + 1) * 2
    y = lambda v: top + plot_h - v / scale_max * plot_h  # noqa: E731
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
        f'<text x="{left}" y="34" fill="#555">server CPU per request, µs (lower is better); '
        f"label: ratio to the mio loop</text>",
    ]
    # Legend.
    lx = left
    for s in servers:
        out.append(f'<rect x="{lx}" y="44" width="10" height="10" fill="{COLOURS.get(s, "#888")}"/>')
        label = escape(SERVER_LABELS.get(s, s))
        out.append(f'<text x="{lx + 14}" y="53">{label}</text>')
        lx += 14 + 7 * len(SERVER_LABELS.get(s, s)) + 16
    # Grid and axis.
    for tick in range(0, scale_max + 1, 2):
        ty = y(tick)
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#555">{tick}</text>')
    # Bars.
    for gi, (shape, per) in enumerate(cpu.items()):
        gx = left + 10 + gi * (group_w + group_gap)
        floor = per.get("mio")
        for si, s in enumerate(servers):
            if s not in per:
                continue
            v = per[s]
            x = gx + si * (bar + gap)
            out.append(
                f'<rect x="{x}" y="{y(v):.1f}" width="{bar}" height="{top + plot_h - y(v):.1f}" '
                f'fill="{COLOURS.get(s, "#888")}"><title>{escape(s)}: {v:.2f} µs</title></rect>'
            )
            if floor:
                # Written upwards from just above the bar, centred on it.
                tx, ty = x + bar / 2 + 3, y(v) - 4
                out.append(
                    f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="9" '
                    f'transform="rotate(-90 {tx:.1f} {ty:.1f})">{v / floor:.2f}</text>'
                )
        # Two lines ("echo 64 B," / "closed loop"): one would overrun the next group.
        # A case of several connection counts is SHAPE@cN: "echo 64 B," / "closed loop, N conn.".
        name, _, conns = shape.partition("@c")
        first, _, second = SHAPE_LABELS.get(name, name).partition(", ")
        if conns:
            second = f"{second}, {conns} conn." if second else f"{conns} conn."
        cx = gx + group_w / 2
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{escape(first)}</text>')
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 30}" text-anchor="middle">{escape(second)}</text>')
    out.append(
        f'<line x1="{left}" x2="{width - 20}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#333"/>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.tsv OUT.svg")
    cpu = read(sys.argv[1], tck=100)
    if not cpu:
        sys.exit(f"{sys.argv[1]}: no measured windows")
    title = "netloop against tokio, smol and the mio floor: one server core, loopback load"
    with open(sys.argv[2], "w") as f:
        f.write(svg(cpu, title))


if __name__ == "__main__":
    main()
