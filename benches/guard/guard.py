#!/usr/bin/env python3
"""One run, one table: netloop against tokio on the scheduler, timer, memory and
network shapes, so that a lead lost in one family shows next to the others.

    benches/guard/run.sh                  # every family (about 8 minutes on 2 cores)
    benches/guard/run.sh scheduler timers # some of them
    QUICK=1 benches/guard/run.sh          # fewer rounds: a smoke test of the script

It builds the release examples once, runs each family's report (the same source on
both runtimes, interleaved inside the report: `runtime_report`, `timers_report`,
`memory_report`, and `benches/net/run.sh` with the netloop and tokio-mt servers only),
reads the Markdown table each prints, and prints one table: family, shape, netloop,
tokio, netloop/tokio. Each report's own output goes to target/guard/FAMILY.md. The
figures are printed, never asserted; run it with nothing else on the machine, before and
after a change to the scheduler, the timers, the task layer or the I/O path, and put both
tables in the commit message.
"""

import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
OUT = os.path.join(TARGET, "guard")
EXAMPLES = os.path.join(TARGET, "release", "examples")
QUICK = os.environ.get("QUICK") == "1"


def tables(text):
    """Every Markdown table in `text`: a list of rows, each a list of cells, header first."""
    found, rows = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    if rows:
        found.append(rows)
    return found


def column(header, want, avoid=None):
    for i, name in enumerate(header):
        if want(name.lower()) and not (avoid and avoid(name.lower())):
            return i
    return None


def ratio_rows(text, family):
    """(family, shape, netloop, tokio, ratio) from each table with a netloop/tokio column."""
    out = []
    for table in tables(text):
        header = table[0]
        r = column(header, lambda n: n.startswith("netloop/tokio") or n == "ratio")
        if r is None:
            continue
        nl = column(header, lambda n: n.startswith("netloop"), lambda n: "/" in n)
        tk = column(header, lambda n: n.startswith("tokio"), lambda n: "/" in n)
        for row in table[1:]:
            if len(row) <= max(r, nl or 0, tk or 0):
                continue
            out.append((family, row[0], row[nl] if nl is not None else "", row[tk] if tk is not None else "", row[r]))
    return out


def net_rows(text):
    """(family, shape, netloop, tokio, ratio) of server CPU per request, from run.sh's
    report: netloop's and tokio-mt's rows of each shape."""
    out = []
    for table in tables(text):
        header = table[0]
        if header[:2] != ["shape", "server"]:
            continue
        cpu = column(header, lambda n: n.startswith("server cpu"))
        if cpu is None:
            continue
        by_shape = {}
        for row in table[1:]:
            by_shape.setdefault(row[0], {})[row[1]] = row[cpu].split()[0]
        for shape, servers in by_shape.items():
            a, b = servers.get("netloop"), servers.get("tokio-mt")
            if a and b:
                out.append(("network", shape + " (CPU µs/req)", a, b, f"{float(a) / float(b):.2f}"))
        break
    return out


def run(cmd, family, env=None):
    start = time.time()
    print(f"guard: {family}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, **(env or {})})
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, family + ".md"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], file=sys.stderr)
        sys.exit(f"guard: {family} failed (exit {proc.returncode}); its output is in {OUT}/{family}.md")
    print(f"guard: {family}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    return proc.stdout


def main():
    families = sys.argv[1:] or ["scheduler", "timers", "memory", "network"]
    known = {"scheduler", "timers", "memory", "network"}
    for f in families:
        if f not in known:
            sys.exit(f"unknown family {f!r}; known: {' '.join(sorted(known))}")
    subprocess.run(["cargo", "build", "--release", "-p", "netloop-benches", "--examples"], cwd=ROOT, check=True)
    rows = []
    if "scheduler" in families:
        text = run([os.path.join(EXAMPLES, "runtime_report"), "10" if QUICK else "50"], "scheduler")
        rows += ratio_rows(text, "scheduler")
    if "timers" in families:
        text = run([os.path.join(EXAMPLES, "timers_report"), "1" if QUICK else "5"], "timers")
        rows += ratio_rows(text, "timers")
    if "memory" in families:
        text = run([os.path.join(EXAMPLES, "memory_report")], "memory")
        rows += ratio_rows(text, "memory")
    if "network" in families:
        env = {"SERVERS": "netloop tokio-mt", "SHAPES": "echo-64 echo-1k http-wrk",
               "ROUNDS": "1" if QUICK else "4", "OUT": os.path.join(OUT, "net"),
               "CHART": os.path.join(OUT, "net", "chart.svg")}
        run(["bash", "benches/net/run.sh"], "network", env)
        with open(os.path.join(OUT, "net", "report.md")) as f:
            rows += net_rows(f.read())
    print("| family | shape | netloop | tokio | netloop/tokio |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
