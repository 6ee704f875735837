#!/usr/bin/env python3
"""The test suites of crates built on tokio, run unchanged in patch mode.

For each crate (pinned in SUITES), copies its source from the cargo registry into a
scratch directory under the target directory, adds

    [patch.crates-io]
    tokio = { path = "<netloop>/crates/tokio" }

to its manifest, builds each of its test targets (the library's unit tests and every
integration test file, each on its own, so that a compile error in one hides nothing in
the others) with the features its suite needs, runs each with a timeout, and prints one
line per target and a final `N passed, M failed` line. `--reference` does the same
without the patch: the counts on tokio itself, which patch mode is judged against.
Nothing of those crates is committed: their sources are read from the registry at run
time (cargo fetches them on first use).

    tests/patch-mode/run.sh                       # every crate in SUITES
    tests/patch-mode/run.sh tokio-util tower      # some of them
    tests/patch-mode/run.sh --reference           # the same suites on tokio
    tests/patch-mode/run.sh --floor               # fail below floor.txt's counts

Results: target/patch-mode/CRATE/results.tsv and failures.txt (target/patch-mode-tokio/
for --reference), build and run logs per target under logs/. tokio's own suite in patch
mode is `tests/tokio-conformance/run.sh --patch`.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "tokio-conformance"))
import run as conformance  # noqa: E402  (the per-binary runner with timeouts)

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))

# crate -> (version, cargo features for its tests). The features are those its CI tests
# with; `full` where the crate has one.
SUITES = {
    "tokio-util": ("0.7.20", ["full"]),
    "hyper-util": ("0.1.21", ["full"]),
    "tower": ("0.5.3", ["full"]),
}


def prepare(name, version, out, reference):
    """A copy of the crate's source under out/pkg, its manifest patched; returns the
    package directory."""
    pkg = os.path.join(out, "pkg")
    conformance.copy_source(name, version, pkg, "target", "Cargo.lock")

    def patched(text):
        # Its own workspace: the copy lives under netloop's target directory.
        text += "\n[workspace]\n"
        if not reference:
            tokio = os.path.join(ROOT, "crates", "tokio")
            text += f"\n[patch.crates-io]\ntokio = {{ path = {json.dumps(tokio)} }}\n"
        return text

    conformance.edit_file(os.path.join(pkg, "Cargo.toml"), patched)
    return pkg


def targets(pkg):
    """The test targets: ("lib", None) and ("test", NAME) for each integration test."""
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--manifest-path",
         os.path.join(pkg, "Cargo.toml")], stdout=subprocess.PIPE, check=True, text=True).stdout)
    found = []
    for t in meta["packages"][0]["targets"]:
        if "lib" in t["kind"] and t.get("test", True):
            found.append(("lib", t["name"]))
        elif "test" in t["kind"]:
            found.append(("test", t["name"]))
    return found


def build(pkg, out, features, tgts):
    """Builds every target in one cargo run; returns {label: executable}; writes each
    target's compiler errors to logs/LABEL.log."""
    cmd = ["cargo", "test", "--no-run", "--no-fail-fast", "--message-format=json",
           "--manifest-path", os.path.join(pkg, "Cargo.toml"),
           "--target-dir", os.path.join(out, "build")]
    if features:
        cmd += ["--features", ",".join(features)]
    for kind, t in tgts:
        cmd += ["--lib"] if kind == "lib" else ["--test", t]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    names = [label(k, t) for k, t in tgts]
    return conformance.collect_build(
        proc, names, os.path.join(out, "logs"),
        lambda target: label("lib" if "lib" in target.get("kind", []) else "test", target.get("name")))


def label(kind, name):
    return "lib" if kind == "lib" else name


def run_suite(name, reference):
    version, features = SUITES[name]
    out = os.path.join(TARGET, "patch-mode-tokio" if reference else "patch-mode", name)
    os.makedirs(out, exist_ok=True)
    pkg = prepare(name, version, out, reference)
    tgts = targets(pkg)
    exes = build(pkg, out, features, tgts)
    # The per-binary runner runs tests from the package's directory, as cargo does.
    conformance.PKG = pkg
    rows, failures = [], []
    for kind, t in tgts:
        key = label(kind, t)
        if key not in exes:
            rows.append((key, "COMPILE-ERROR", 0, 0, 0))
            failures.append(f"{key}::* (does not compile; see logs/{key}.log)")
        else:
            passed, failed, ignored, failing, timed_out, log = conformance.run_one(exes[key])
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
    return passed, failed, compiled, len(rows)


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
    below = []
    for c in crates:
        start = time.time()
        passed, failed, compiled, total = run_suite(c, args.reference)
        mode = "tokio" if args.reference else "patch mode"
        print(f"{c} {SUITES[c][0]} ({mode}): {compiled} of {total} targets compile; "
              f"{passed} passed, {failed} failed; {time.time() - start:.0f} s", flush=True)
        if c in floor and passed < floor[c]:
            below.append(f"{c}: {passed} passed is below the recorded {floor[c]}")
    for b in below:
        print(f"patch-mode floor: {b}", file=sys.stderr)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
