#!/usr/bin/env python3
"""tokio's own integration tests, built and run against netloop.

Reads the tests of the tokio crate source that cargo fetched (the pinned version, see
TOKIO_VERSION), copies the files in scope (scope.txt) into a scratch package under the
target directory, rewrites tokio's runtime paths to netloop's, builds every file as its
own test target (a compile error in one hides nothing in the others), runs each with a
timeout, and prints one line per file and a final `N passed, M failed` line. Nothing
of tokio's is committed: the files are read from the cargo registry at run time.

    tests/tokio-conformance/run.sh                  # everything in scope
    tests/tokio-conformance/run.sh --files "rt_common task_local"
    tests/tokio-conformance/run.sh --floor          # fail below floor.txt's count
    tests/tokio-conformance/run.sh --reference      # the same files on tokio itself
    tests/tokio-conformance/run.sh --patch          # tokio's whole suite, unchanged, in patch mode
    tests/tokio-conformance/run.sh --patch --reference   # the whole suite on tokio itself
    tests/tokio-conformance/run.sh --unstable       # the whole suite in patch mode, tokio_unstable on
    tests/tokio-conformance/run.sh --unstable --reference  # the same on tokio itself
    tests/tokio-conformance/run.sh --drivers        # socket files, patch mode, epoll then io_uring

`--reference` builds the files unchanged against tokio (results under
target/conformance-tokio/): the counts netloop's are compared with.

`--patch` is patch mode (docs/patch-mode.md): every file of tokio's suite (scope.txt is
not read), unchanged, built with `[patch.crates-io] tokio = { path = "crates/tokio" }`,
so that `tokio::` in the tests, in tokio-test and in tokio-stream is netloop's `tokio`
crate. Nothing is rewritten and nothing of the registry's tokio is built. Results under
target/conformance-patch/ (with `--reference`: target/conformance-patch-tokio/, the
same files on tokio); `--floor` reads patch-floor.txt.

`--unstable` is patch mode with tokio's unstable surface: every crate is built with
`RUSTFLAGS="--cfg tokio_unstable"` (as a user turns it on), tokio's features `full`,
`test-util`, `tracing` and `taskdump`, and the test files' `cfg(feature = "tracing")`
and `cfg(feature = "taskdump")` on, with tokio's dev-dependencies for those files
(tracing, tracing-mock, backtrace). Results under target/conformance-unstable/ (with
`--reference`: target/conformance-unstable-tokio/); `--floor` reads unstable-floor.txt.

Results: target/conformance/results.tsv (file, status, passed, failed, ignored) and
target/conformance/failures.txt (file::test per failing test), build logs per file in
target/conformance/logs/.
"""

import argparse
import fnmatch
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

TOKIO_VERSION = "1.54.1"
# The tokio-test whose I/O mock is patched to netloop's traits (patch_tokio_test).
TOKIO_TEST_VERSION = "0.4.6"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
OUT = os.path.join(TARGET, "conformance")
PKG = os.path.join(OUT, "pkg")
# --reference: tokio's files unchanged, against tokio.
REFERENCE = False
# --patch: tokio's files unchanged, against netloop's `tokio` crate through [patch].
PATCH = False
# --unstable: patch mode with `--cfg tokio_unstable` and tokio's unstable features.
UNSTABLE = False
# tokio's features the --unstable runs turn on (and the test files' gates of their names).
UNSTABLE_FEATURES = ["full", "test-util", "tracing", "taskdump"]
# A whole file's run; then each test left unfinished runs alone, for TEST_TIMEOUT.
RUN_TIMEOUT = int(os.environ.get("CONFORMANCE_TIMEOUT", "40"))
TEST_TIMEOUT = int(os.environ.get("CONFORMANCE_TEST_TIMEOUT", "10"))

# tokio's modules and macros that netloop provides; everything else of tokio (stream,
# the test helpers) stays tokio's own, as the issue defines the exercise.
NETLOOP_ITEMS = {
    "runtime", "task", "time", "net", "io", "spawn", "main", "test", "select", "join",
    "try_join", "pin", "task_local", "signal", "fs", "process", "sync",
}


def registry_source(name, version):
    """The source of crate `name` at `version` that cargo unpacked in its registry,
    fetched through a scratch package that depends on it if it is not there yet."""
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    pattern = os.path.join(home, "registry", "src", "*", f"{name}-{version}")
    found = sorted(glob.glob(pattern))
    if not found:
        tmp = os.path.join(TARGET, "registry-fetch", name)
        os.makedirs(os.path.join(tmp, "src"), exist_ok=True)
        with open(os.path.join(tmp, "src", "lib.rs"), "w"):
            pass
        with open(os.path.join(tmp, "Cargo.toml"), "w") as f:
            f.write(f'[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n'
                    f'[dependencies]\n{name} = "={version}"\n[workspace]\n')
        subprocess.run(["cargo", "fetch", "--manifest-path", os.path.join(tmp, "Cargo.toml")], check=True)
        found = sorted(glob.glob(pattern))
    if not found:
        sys.exit(f"{name} {version} is not in {home}/registry/src after cargo fetch")
    return found[0]


def copy_source(name, version, dst, *ignore):
    """A fresh copy of a registry crate's source at `dst`, without `ignore`'s patterns."""
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    shutil.copytree(registry_source(name, version), dst, ignore=shutil.ignore_patterns(*ignore))


def edit_file(path, edit):
    """Rewrites the file at `path` as `edit` returns it from its text."""
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(edit(text))


def in_scope(tests_dir, wanted):
    if PATCH:
        # The whole suite.
        return [os.path.basename(p)[:-3] for p in sorted(glob.glob(os.path.join(tests_dir, "*.rs")))
                if not wanted or os.path.basename(p)[:-3] in wanted]
    patterns = []
    with open(os.path.join(HERE, "scope.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                patterns.append(line)
    files = []
    for path in sorted(glob.glob(os.path.join(tests_dir, "*.rs"))):
        name = os.path.basename(path)
        keep = False
        for p in patterns:
            if p.startswith("-"):
                if fnmatch.fnmatch(name, p[1:]):
                    keep = False
            elif fnmatch.fnmatch(name, p):
                keep = True
        stem = name[:-3]
        if keep and (not wanted or stem in wanted):
            files.append(stem)
    return files


def split_use_group(indent, body):
    """`use tokio::{a, b::c, sync::d};` -> a netloop `use` and a tokio `use`."""
    items, depth, cur = [], 0, ""
    for ch in body:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    ours = [i for i in items if re.split(r"[:\s{]", i, maxsplit=1)[0] in NETLOOP_ITEMS]
    theirs = [i for i in items if i not in ours]
    out = []
    if ours:
        out.append(f"{indent}use netloop::{{{', '.join(ours)}}};")
    if theirs:
        out.append(f"{indent}use tokio::{{{', '.join(theirs)}}};")
    return "\n".join(out)


def rewrite(source):
    """tokio's runtime paths to netloop's; `tokio::sync` and friends stay."""
    source = re.sub(r"(?m)^([ \t]*(?:pub\s+)?)use\s+(?:::)?tokio::\{(.*?)\};",
                    lambda m: split_use_group(m.group(1), m.group(2)), source, flags=re.S)
    # The runtime crate under another name (`use ::tokio as tokio1;`, `pub use ::tokio;`
    # in a module) is the crate the test means by `tokio`: netloop, under that name.
    source = re.sub(r"(?m)^([ \t]*(?:pub\s+)?use\s+)::tokio(\s+as\s+\w+)?;",
                    lambda m: f"{m.group(1)}::netloop{m.group(2) or ' as tokio'};", source)
    items = "|".join(sorted(NETLOOP_ITEMS, key=len, reverse=True))
    return re.sub(rf"(?<![\w:])(::)?tokio::({items})\b",
                  lambda m: f"{m.group(1) or ''}netloop::{m.group(2)}", source)


def write_manifest(files):
    os.makedirs(os.path.join(PKG, "tests"), exist_ok=True)
    netloop = os.path.join(ROOT, "crates", "netloop")
    targets = "".join(f'\n[[test]]\nname = "{f}"\npath = "tests/{f}.rs"\n' for f in files)
    features = ["full", "rt", "rt-multi-thread", "macros", "net", "time", "sync", "io-util",
                "io-std", "fs", "process", "signal", "test-util", "parking_lot"]
    if UNSTABLE:
        features += ["tracing", "taskdump"]
        tokio_features = json.dumps(UNSTABLE_FEATURES)
    else:
        tokio_features = json.dumps(["full", "test-util"] if REFERENCE or PATCH else ["sync", "macros", "io-util", "rt", "time"])
    # tokio's dev-dependencies of its unstable files (tracing_*, task_trace_self).
    unstable_deps = ('tracing = "0.1"\ntracing-mock = "=0.1.0-beta.1"\nbacktrace = "0.3.58"\n'
                     if UNSTABLE else "")
    tokio_version = f"={TOKIO_VERSION}"
    netloop_dep = f'netloop = {{ path = {json.dumps(netloop)}, features = ["test-util"] }}'
    patch = ""
    if PATCH:
        # Any 1.x: the patch's version (above every release) must satisfy it; on tokio
        # itself, the pinned release.
        tokio_version = f"={TOKIO_VERSION}" if REFERENCE else "1.54"
        netloop_dep = "# patch mode: the tests know only `tokio`."
        if not REFERENCE:
            patched = os.path.join(ROOT, "crates", "tokio")
            patch = f"\n[patch.crates-io]\ntokio = {{ path = {json.dumps(patched)} }}\n"
    # Not under a `--reference` run (a REFERENCE global), whose tests are tokio's own.
    elif files and not REFERENCE:
        patch = f"\n[patch.crates-io]\ntokio-test = {{ path = {json.dumps(patch_tokio_test())} }}\n"
    manifest = f"""[package]
name = "tokio-conformance"
version = "0.0.0"
edition = "2021"
publish = false
autotests = false
# tokio's tests run in tokio's crate directory; some read its manifest (`Cargo.toml`)
# and look for tokio's homepage in it.
homepage = "https://tokio.rs"

# The cfg(feature = ...) gates of tokio's tests, all on.
[features]
default = {json.dumps(features)}
{chr(10).join(f'{f} = []' for f in features)}

[dependencies]
{netloop_dep}
# tokio's own: what tokio-test and tokio-stream need (and, for --reference, the runtime);
# in patch mode, netloop's `tokio` crate.
tokio = {{ version = "{tokio_version}", features = {tokio_features} }}
# tokio's tests name its own dependencies as crates too.
bytes = "1"
pin-project-lite = "0.2"
tokio-test = "={TOKIO_TEST_VERSION}"
tokio-stream = "0.1"
futures = {{ version = "0.3", features = ["async-await"] }}
futures-test = "0.3"
futures-concurrency = "7.6"
async-stream = "0.3"
libc = "0.2"
socket2 = {{ version = "0.6", features = ["all"] }}
rand = "0.9"
tempfile = "3"
nix = {{ version = "0.31", features = ["aio", "fs", "socket"] }}
mockall = "0.13"
{unstable_deps}{targets}{patch}
[workspace]
"""
    with open(os.path.join(PKG, "Cargo.toml"), "w") as f:
        f.write(manifest)


def patch_tokio_test():
    """A copy of tokio-test whose I/O mock (`tokio_test::io`) implements netloop's I/O
    traits instead of tokio's, and whose scripted waits sleep on netloop's clock, under
    OUT/tokio-test; returns its manifest's directory.

    tokio's io tests drive tokio's io utilities with that mock. Run against netloop,
    the utilities are netloop's, so the mock must speak netloop's traits, as it speaks
    tokio's when the tests run on tokio. Only `io.rs`'s imports change."""
    dst = os.path.join(OUT, "tokio-test")
    copy_source("tokio-test", TOKIO_TEST_VERSION, dst, "tests", "Cargo.lock", "target")

    def netloop_io(text):
        text = text.replace("use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};",
                            "use netloop::io::{AsyncRead, AsyncWrite, ReadBuf};")
        # A scripted wait sleeps on the clock of the runtime the test runs on: netloop's.
        return text.replace("use tokio::time::{self, Duration, Instant, Sleep};",
                            "use netloop::time::{self, Duration, Instant, Sleep};")

    def on_netloop(text):
        # Its own test targets are not copied; its dev-dependencies are not needed.
        text = re.sub(r"(?ms)^\[\[test\]\].*?(?=^\[(?!\[test))", "", text)
        text = re.sub(r"(?ms)^\[dev-dependencies[^\]]*\].*?(?=^\[|\Z)", "", text)
        netloop = os.path.join(ROOT, "crates", "netloop")
        return text + f"\n[dependencies.netloop]\npath = {json.dumps(netloop)}\n"

    edit_file(os.path.join(dst, "src", "io.rs"), netloop_io)
    edit_file(os.path.join(dst, "Cargo.toml"), on_netloop)
    return dst


def count_tests(source):
    return len(re.findall(r"#\[(?:(?:::)?(?:netloop|tokio)::test|test|maybe_tokio_test)\b", source))


def build(files):
    """Builds every file's target in one cargo run; returns {file: executable} and
    writes each file's compiler errors to logs/FILE.log."""
    cmd = ["cargo", "build", "--keep-going", "--message-format=json",
           "--manifest-path", os.path.join(PKG, "Cargo.toml"), "--target-dir", os.path.join(OUT, "build")]
    for f in files:
        cmd += ["--test", f]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=build_env())
    return collect_build(proc, files, os.path.join(OUT, "logs"), lambda target: target.get("name"))


def build_env():
    """cargo's environment: the caller's, plus `--cfg tokio_unstable` for every crate
    under --unstable (as a user sets it, through RUSTFLAGS)."""
    env = dict(os.environ)
    if UNSTABLE:
        flags = env.get("RUSTFLAGS", "")
        env["RUSTFLAGS"] = (flags + " --cfg tokio_unstable").strip()
    return env


def collect_build(proc, names, logs, name_of):
    """Reads a `cargo ... --message-format=json` run: returns {name: executable} for the
    targets in `names` (`name_of` names a message's target) and writes each one's
    compiler errors to logs/NAME.log (cargo's stderr when it built nothing and said
    nothing of it)."""
    exes, errors = {}, {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        name = name_of(msg.get("target", {}))
        if name not in names:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            exes[name] = msg["executable"]
        elif msg.get("reason") == "compiler-message" and msg.get("message", {}).get("level") == "error":
            errors.setdefault(name, []).append(msg["message"].get("rendered", ""))
    os.makedirs(logs, exist_ok=True)
    for name in names:
        with open(os.path.join(logs, name + ".log"), "w") as log:
            log.write("".join(errors.get(name, [])))
            if name not in exes and not errors.get(name):
                log.write(proc.stderr[-20000:])
    return exes


# libtest's marker of a #[should_panic] test in its result line.
PANICS = r"(?: - should panic)?"


def run_tests(exe, args, limit):
    """Runs `exe` with libtest `args`; returns (output, timed out). At the limit the
    binary is killed with its whole process group (whatever it started too), and the
    output so far is kept."""
    proc = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=PKG, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit)
        return out.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return out.decode(errors="replace"), True


def run_one(exe, filters=()):
    """Runs a test binary; returns (passed, failed, ignored, failing names, timed out,
    output). If the whole file does not finish in time, or its process dies before
    the summary line (an abort), each test that had not finished runs again on its
    own, with a limit of its own, so one hanging or aborting test costs only itself.
    `filters`: libtest arguments that choose the tests (`--skip NAME`)."""
    listed = subprocess.run([exe, "--list", "--format", "terse", *filters], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, timeout=60, cwd=PKG)
    names = [l[:-len(": test")] for l in listed.stdout.splitlines() if l.endswith(": test")]
    out, timed_out = run_tests(exe, ["--test-threads", "2", *filters], RUN_TIMEOUT)
    ok = set(re.findall(rf"^test (\S+){PANICS} \.\.\. ok$", out, re.M))
    ignored = set(re.findall(rf"^test (\S+){PANICS} \.\.\. ignored", out, re.M))
    finished = ok | ignored | set(re.findall(rf"^test (\S+){PANICS} \.\.\. FAILED$", out, re.M))
    hung = []
    crashed = not timed_out and not re.search(r"^test result: ", out, re.M)
    if timed_out or crashed:
        for name in names:
            if name in finished:
                continue
            one, one_timed_out = run_tests(exe, [name, "--exact", "--test-threads", "1"], TEST_TIMEOUT)
            out += f"\n--- {name} alone ---\n" + one
            if one_timed_out:
                hung.append(name)
            elif re.search(rf"^test {re.escape(name)}{PANICS} \.\.\. ok$", one, re.M):
                ok.add(name)
            elif re.search(rf"^test {re.escape(name)}{PANICS} \.\.\. ignored", one, re.M):
                ignored.add(name)
    failing = [n + (" (timed out)" if n in hung else "") for n in names if n not in ok and n not in ignored]
    return len(ok), len(failing), len(ignored), failing, bool(hung), out


def fresh_tests_dir(tokio):
    """Empties the scratch package's tests/ and copies tokio's test support into it."""
    if os.path.isdir(os.path.join(PKG, "tests")):
        shutil.rmtree(os.path.join(PKG, "tests"))
    os.makedirs(os.path.join(PKG, "tests"))
    support = os.path.join(tokio, "tests", "support")
    if os.path.isdir(support):
        shutil.copytree(support, os.path.join(PKG, "tests", "support"))


FALLBACK_LINE = "io_uring is unavailable"
# `--drivers` without `--files`: tokio's socket and I/O-driver files (patterns).
SOCKET_FAMILIES = ["net_*", "tcp_*", "udp*", "uds_*", "io_driver*", "io_async_fd", "buffered",
                   "io_copy_bidirectional"]


def run_both_drivers(args):
    """The files (in patch mode) under both of netloop's I/O drivers: each test binary
    runs with NETLOOP_IO_DRIVER=epoll, then =io_uring. Proves the second run was on the
    ring: the kernel must allow io_uring, and no run may print netloop's fallback line."""
    global OUT, PKG, REFERENCE, PATCH, UNSTABLE
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            disabled = f.read().strip()
    except OSError:
        disabled = "missing"
    if disabled != "0":
        print(f"io_uring is not allowed here (kernel.io_uring_disabled = {disabled}): nothing to compare",
              file=sys.stderr)
        return 1
    UNSTABLE, PATCH, REFERENCE = False, True, False
    OUT = os.path.join(TARGET, "conformance-patch")
    PKG = os.path.join(OUT, "pkg")
    start = time.time()
    tokio = registry_source("tokio", TOKIO_VERSION)
    patterns = args.files.split() or SOCKET_FAMILIES
    files = [f for f in in_scope(os.path.join(tokio, "tests"), set())
             if any(fnmatch.fnmatch(f, p) for p in patterns)]
    if not files:
        sys.exit("no test file matched")
    fresh_tests_dir(tokio)
    for f in files:
        shutil.copy(os.path.join(tokio, "tests", f + ".rs"), os.path.join(PKG, "tests", f + ".rs"))
    write_manifest(files)
    exes = build(files)
    totals = {"epoll": 0, "io_uring": 0}
    worse, fell_back = [], []
    os.makedirs(os.path.join(OUT, "logs"), exist_ok=True)
    for f in files:
        if f not in exes:
            print(f"{f:<28} does not compile (logs/{f}.log)")
            worse.append(f)
            continue
        counts = {}
        for driver in ("epoll", "io_uring"):
            os.environ["NETLOOP_IO_DRIVER"] = driver
            passed, failed, _ignored, failing, _timed_out, out = run_one(exes[f])
            counts[driver] = (passed, failed, failing)
            totals[driver] += passed
            if FALLBACK_LINE in out:
                fell_back.append(f"{f} ({driver})")
            with open(os.path.join(OUT, "logs", f"{f}.{driver}.run.log"), "w") as log:
                log.write(out)
        os.environ.pop("NETLOOP_IO_DRIVER", None)
        (ep, ef, _), (up, uf, ufailing) = counts["epoll"], counts["io_uring"]
        mark = "" if up >= ep else "   <- fewer on io_uring: " + ", ".join(ufailing)
        if up < ep:
            worse.append(f)
        print(f"{f:<28} epoll {ep:>3}/{ep + ef:<3}  io_uring {up:>3}/{up + uf:<3}{mark}", flush=True)
    print(f"tokio {TOKIO_VERSION} (patch mode), both drivers: {len(files)} files; {time.time() - start:.0f} s")
    print(f"conformance: epoll {totals['epoll']} passed, io_uring {totals['io_uring']} passed")
    if fell_back:
        print("netloop fell back to epoll in: " + ", ".join(fell_back), file=sys.stderr)
        return 1
    if worse:
        print("io_uring passes fewer than epoll in: " + ", ".join(worse), file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="", help="space-separated file stems to run (default: all in scope)")
    ap.add_argument("--floor", action="store_true", help="exit 1 if fewer tests pass than floor.txt says")
    ap.add_argument("--reference", action="store_true", help="run the files unchanged on tokio itself")
    ap.add_argument("--patch", action="store_true",
                    help="tokio's whole suite, unchanged, on netloop's `tokio` crate through [patch]")
    ap.add_argument("--unstable", action="store_true",
                    help="--patch with --cfg tokio_unstable and tokio's features full, test-util, tracing, taskdump")
    ap.add_argument("--drivers", action="store_true",
                    help="run each file twice, NETLOOP_IO_DRIVER=epoll then io_uring; exit 1 if io_uring passes fewer")
    args = ap.parse_args()
    if args.drivers:
        return run_both_drivers(args)
    global OUT, PKG, REFERENCE, PATCH, UNSTABLE
    UNSTABLE = args.unstable
    PATCH = args.patch or UNSTABLE
    REFERENCE = args.reference
    mode = "-unstable" if UNSTABLE else "-patch" if PATCH else ""
    OUT = os.path.join(TARGET, "conformance" + mode + ("-tokio" if REFERENCE else ""))
    PKG = os.path.join(OUT, "pkg")
    start = time.time()
    tokio = registry_source("tokio", TOKIO_VERSION)
    files = in_scope(os.path.join(tokio, "tests"), set(args.files.split()))
    if not files:
        sys.exit("no test file matched")
    fresh_tests_dir(tokio)
    expected = {}
    for f in files:
        with open(os.path.join(tokio, "tests", f + ".rs")) as src:
            text = src.read() if REFERENCE or PATCH else rewrite(src.read())
        expected[f] = count_tests(text)
        with open(os.path.join(PKG, "tests", f + ".rs"), "w") as dst:
            dst.write(text)
    write_manifest(files)
    exes = build(files)

    rows, failures = [], []
    total_pass = total_fail = 0
    for f in files:
        if f not in exes:
            status, passed, failed, ignored = "COMPILE-ERROR", 0, expected[f], 0
            failures.append(f"{f}::* (does not compile; see logs/{f}.log)")
        else:
            passed, failed, ignored, failing, timed_out, out = run_one(exes[f])
            status = "HANGS" if timed_out else "compiled"
            failures += [f"{f}::{n}" for n in failing]
            with open(os.path.join(OUT, "logs", f + ".run.log"), "w") as log:
                log.write(out)
        total_pass += passed
        total_fail += failed
        rows.append((f, status, passed, failed, ignored))
        print(f"{f:<36} {status:<14} {passed:>4}/{passed + failed:<4} ({ignored} ignored)", flush=True)

    with open(os.path.join(OUT, "results.tsv"), "w") as out:
        out.write("file\tstatus\tpassed\tfailed\tignored\n")
        for r in rows:
            out.write("\t".join(map(str, r)) + "\n")
    with open(os.path.join(OUT, "failures.txt"), "w") as out:
        out.write("\n".join(failures) + "\n")
    compiled = sum(1 for r in rows if r[1] != "COMPILE-ERROR")
    mode = " (patch mode)" if PATCH and not REFERENCE else ""
    mode += ", tokio_unstable" if UNSTABLE else ""
    print(f"tokio {TOKIO_VERSION}{mode}: {compiled} of {len(rows)} files compile; "
          f"{time.time() - start:.0f} s; results in {os.path.relpath(OUT, ROOT)}/")
    print(f"conformance: {total_pass} passed, {total_fail} failed")
    if args.floor:
        floor_file = "unstable-floor.txt" if UNSTABLE else "patch-floor.txt" if PATCH else "floor.txt"
        with open(os.path.join(HERE, floor_file)) as fl:
            floor = int(fl.read().split()[0])
        if total_pass < floor:
            print(f"conformance floor: {total_pass} passed is below the recorded {floor}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
