#!/usr/bin/env python3
"""The test suites of crates built on tokio, run unchanged in patch mode.

For each crate (pinned in SUITES), copies its source from the cargo registry into a
scratch directory under the target directory, adds

    [patch.crates-io]
    tokio = { path = "<netloop>/crates/tokio" }

to its manifest, builds each of its test targets (the library's unit tests and every
integration test file, each on its own, so that a compile error in one hides nothing in
the others, and its examples where SUITES says so) with the features its CI tests with,
runs each test binary with a timeout (one past it is killed, and each of its unfinished
tests runs again alone: a hanging test costs only itself and shows as HANGS), and prints
one line per target and a final `N passed, M failed` line. `--reference` does the same
without the patch: the counts on tokio itself, which patch mode is judged against.
Nothing of those crates is committed: their sources are read from the registry at run
time (cargo fetches them on first use).

    tests/patch-mode/run.sh                       # every crate in SUITES
    tests/patch-mode/run.sh tokio-util tower      # some of them
    tests/patch-mode/run.sh --reference           # the same suites on tokio
    tests/patch-mode/run.sh --floor               # fail below floor.txt's counts, or on a compile error

Results: target/patch-mode/CRATE/results.tsv and failures.txt (target/patch-mode-tokio/
for --reference), build and run logs per target under logs/; the suites' one build
directory is target/patch-mode/build. tokio's own suite in patch
mode is `tests/tokio-conformance/run.sh --patch`.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "tokio-conformance"))
import run as conformance  # noqa: E402  (the per-binary runner with timeouts)

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


class Suite:
    """A crate's published tests: `version` (pinned; it must accept tokio 1.x),
    `features` (those its CI tests with: a list, or ALL for --all-features), whether
    its published examples are built too (a compile check: they are not run), libtest
    `skip` filters, and `dev_deps`, manifest text for dev-dependencies its repository
    has and its published manifest lost; each with its reason in SUITES."""

    def __init__(self, version, features, examples=False, skip=(), dev_deps=""):
        self.version, self.features, self.examples = version, features, examples
        self.skip, self.dev_deps = skip, dev_deps


ALL = "all"

SUITES = {
    "tokio-util": Suite("0.7.20", ["full"]),
    "hyper-util": Suite("0.1.21", ["full"]),
    "tower": Suite("0.5.3", ["full"]),
    # Its CI: `cargo test --workspace --all-features --all-targets`. The published crate
    # has its unit tests and one test file. Its unit tests use axum-macros' `__private`
    # test attribute, a path dev-dependency in its repository that publishing drops.
    "axum": Suite("0.8.9", ALL, dev_deps='[dev-dependencies.axum-macros]\nversion = "0.5.1"\n'
                                        'features = ["__private"]\n'),
    # Its CI: `cargo test` (the unit tests; its integration suite, h2-tests, is a crate of
    # its repository that is not published). The hpack fixture tests read
    # fixtures/hpack, which the package excludes: they fail on any runtime.
    "h2": Suite("0.4.20", [], examples=True, skip=["hpack::test::fixture::"]),
    # Its CI: `cargo nextest run --workspace --all-features`. All of them but
    # brotli-mbrotli and zstd-mzstd, whose tests are cfg(async_compression_unstable) (none
    # without that cfg) and whose codecs took the suite's build from under 2 minutes to 13
    # (mbrotli alone 7 GB of memory).
    "async-compression": Suite("0.4.52", ["all", "xz2", "zstdmt"], examples=True),
    # Its CI: `cargo test --release` with the default features. The package has one unit
    # test and its examples (its tests/ directory is not published).
    "tokio-tungstenite": Suite("0.30.0", [], examples=True),
    # Its CI: `cargo nextest run --workspace --all-features`. The package has its unit
    # tests only (tonic's integration tests are crates of its repository).
    "tonic": Suite("0.14.9", ALL),
    # Its CI: `cargo test --locked` over the workspace with the default features. The
    # package has its unit tests (src/tests.rs: endpoints, handshakes, timeouts, on
    # UDP sockets of the runtime) and two test files, one of them behind a feature off
    # by default (post_quantum).
    "quinn": Suite("0.11.12", []),
    # quinn's UDP layer (GSO, GRO, ECN through cmsgs) on tokio's `UdpSocket`.
    "quinn-udp": Suite("0.6.3", []),
}


def prepare(name, suite, out, reference):
    """A copy of the crate's source under out/pkg, its manifest patched; returns the
    package directory."""
    pkg = os.path.join(out, "pkg")
    conformance.copy_source(name, suite.version, pkg, "target", "Cargo.lock")

    def patched(text):
        if suite.dev_deps:
            text += "\n" + suite.dev_deps
        # Its own workspace: the copy lives under netloop's target directory.
        text += "\n[workspace]\n"
        if not reference:
            tokio = os.path.join(ROOT, "crates", "tokio")
            text += f"\n[patch.crates-io]\ntokio = {{ path = {json.dumps(tokio)} }}\n"
        return text

    conformance.edit_file(os.path.join(pkg, "Cargo.toml"), patched)
    return pkg


def targets(pkg, suite):
    """The targets whose required features the suite's (with the defaults) turn on:
    ("lib", NAME), ("test", NAME) for each integration test and, where the suite builds
    its examples, ("example", NAME) for each example."""
    features = suite.features
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--manifest-path",
         os.path.join(pkg, "Cargo.toml")], stdout=subprocess.PIPE, check=True, text=True).stdout)
    package = meta["packages"][0]
    on = set(package["features"]) if features == ALL else enabled(package["features"], ["default", *features])
    found = []
    for t in package["targets"]:
        if not set(t.get("required-features", [])) <= on:
            continue
        if "lib" in t["kind"] and t.get("test", True):
            found.append(("lib", t["name"]))
        elif "test" in t["kind"]:
            found.append(("test", t["name"]))
        elif suite.examples and "example" in t["kind"]:
            found.append(("example", t["name"]))
    return found


def enabled(table, wanted):
    """The features that `wanted` turns on, through the package's feature table."""
    on, todo = set(), list(wanted)
    while todo:
        f = todo.pop()
        if f in table and f not in on:
            on.add(f)
            todo += [x for x in table[f] if not x.startswith("dep:") and "/" not in x]
    return on


def build(pkg, out, features, tgts):
    """Builds every target in one cargo run; returns {label: executable}; writes each
    target's compiler errors to logs/LABEL.log. Every suite of a mode builds in one
    directory (out/../build): netloop's crates and the dependencies the suites share
    (hyper, h2, tower, tokio-util...) build once for all of them."""
    cmd = ["cargo", "test", "--no-run", "--no-fail-fast", "--message-format=json",
           "--manifest-path", os.path.join(pkg, "Cargo.toml"),
           "--target-dir", os.path.join(os.path.dirname(out), "build")]
    if features == ALL:
        cmd += ["--all-features"]
    elif features:
        cmd += ["--features", ",".join(features)]
    for kind, t in tgts:
        cmd += ["--lib"] if kind == "lib" else [f"--{kind}", t]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    names = [label(k, t) for k, t in tgts]

    def label_of(target):
        kind = target.get("kind", [])
        return label("lib" if "lib" in kind else "example" if "example" in kind else "test", target.get("name"))

    return conformance.collect_build(proc, names, os.path.join(out, "logs"), label_of)


def label(kind, name):
    return {"lib": "lib", "test": name, "example": f"example:{name}"}[kind]


def check_graph(pkg, reference):
    """None if the scratch copy's Cargo.lock holds the tokio the run claims (netloop's
    1.999.0 alone in patch mode, the registry's alone on --reference), else what is
    wrong."""
    lock = os.path.join(pkg, "Cargo.lock")
    if not os.path.exists(lock):
        return "no Cargo.lock: cargo resolved no graph (see logs/)"
    with open(lock, "rb") as f:
        packages = tomllib.load(f).get("package", [])
    tokios = [f"tokio {p['version']} ({p.get('source', 'path')})" for p in packages if p["name"] == "tokio"]
    netloop = [p for p in packages if p["name"] == "tokio" and p["version"] == "1.999.0" and "source" not in p]
    if reference:
        ok = tokios and not netloop
    else:
        ok = len(tokios) == 1 and len(netloop) == 1
    want = "the registry's tokio" if reference else "netloop's tokio 1.999.0 alone"
    return None if ok else f"the graph must hold {want}; Cargo.lock has: {', '.join(tokios) or 'no tokio'}"


def run_suite(name, reference):
    suite = SUITES[name]
    out = os.path.join(TARGET, "patch-mode-tokio" if reference else "patch-mode", name)
    os.makedirs(out, exist_ok=True)
    pkg = prepare(name, suite, out, reference)
    tgts = targets(pkg, suite)
    exes = build(pkg, out, suite.features, tgts)
    wrong_graph = check_graph(pkg, reference)
    if wrong_graph:
        print(f"  {name}: {wrong_graph}", file=sys.stderr, flush=True)
    filters = [a for s in suite.skip for a in ("--skip", s)]
    # The per-binary runner runs tests from the package's directory, as cargo does.
    conformance.PKG = pkg
    rows, failures = [], []
    for kind, t in tgts:
        key = label(kind, t)
        if key not in exes:
            rows.append((key, "COMPILE-ERROR", 0, 0, 0))
            failures.append(f"{key}::* (does not compile; see logs/{key}.log)")
        elif kind == "example":
            # Built, not run: an example is a program (a server, a client).
            rows.append((key, "compiled", 0, 0, 0))
        else:
            passed, failed, ignored, failing, timed_out, log = conformance.run_one(exes[key], filters)
            rows.append((key, "HANGS" if timed_out else "compiled", passed, failed, ignored))
            failures += [f"{key}::{n}" for n in failing]
            with open(os.path.join(out, "logs", key + ".run.log"), "w") as f:
                f.write(log)
        r = rows[-1]
        print(f"  {name}/{r[0]:<32} {r[1]:<14} {r[2]:>4}/{r[2] + r[3]:<4} ({r[4]} ignored)", flush=True)
    with open(os.path.join(out, "results.tsv"), "w") as f:
        f.write("target\tstatus\tpassed\tfailed\tignored\n")
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")
    with open(os.path.join(out, "failures.txt"), "w") as f:
        f.write("\n".join(failures) + "\n")
    passed = sum(r[2] for r in rows)
    failed = sum(r[3] for r in rows)
    compiled = sum(1 for r in rows if r[1] != "COMPILE-ERROR")
    hangs = sum(1 for r in rows if r[1] == "HANGS")
    return passed, failed, compiled, len(rows), hangs, wrong_graph


def read_floor():
    floor = {}
    with open(os.path.join(HERE, "floor.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                floor[line[0]] = int(line[1])
    return floor


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("crates", nargs="*", help=f"crates to run (default: {' '.join(SUITES)})")
    ap.add_argument("--reference", action="store_true", help="run the suites on tokio itself")
    ap.add_argument("--floor", action="store_true", help="exit 1 if a suite passes fewer than floor.txt says")
    args = ap.parse_args()
    crates = args.crates or list(SUITES)
    for c in crates:
        if c not in SUITES:
            sys.exit(f"unknown suite {c!r}; known: {' '.join(SUITES)}")
    floor = read_floor() if args.floor else {}
    below, total_passed, total_failed = [], 0, 0
    for c in crates:
        start = time.time()
        passed, failed, compiled, total, hangs, wrong_graph = run_suite(c, args.reference)
        total_passed += passed
        total_failed += failed
        mode = "tokio" if args.reference else "patch mode"
        hung = f"; {hangs} hanging" if hangs else ""
        print(f"{c} {SUITES[c].version} ({mode}): {compiled} of {total} targets compile; "
              f"{passed} passed, {failed} failed{hung}; {time.time() - start:.0f} s", flush=True)
        if wrong_graph:
            below.append(f"{c}: {wrong_graph}")
        if c in floor and passed < floor[c]:
            below.append(f"{c}: {passed} passed is below the recorded {floor[c]}")
        if args.floor and compiled < total:
            below.append(f"{c}: {total - compiled} of its {total} targets do not compile")
    print(f"patch-mode: {total_passed} passed, {total_failed} failed", flush=True)
    for b in below:
        print(f"patch-mode: {b}", file=sys.stderr)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
