#!/usr/bin/env bash
# The patch-mode application's HTTP server (examples/patch-mode: axum behind tower-http's
# TimeoutLayer) under load, the same source built three ways, one worker each:
#
# - patch:   with its `[patch.crates-io]` line: everything on netloop;
# - tokio:   the same source with the `[patch]` section removed: the registry's tokio;
# - compat:  the renamed application of `tests/compat/examples/axum_timeout.rs` (the same
#            route and layer) on netloop with `tokio-compat`: the timeout layer's timers on
#            a second, tokio runtime beside the loop, as before patch mode.
#
#   benches/patch-mode/run.sh             # 3 rounds of 4 s per server and route, about 2 min
#   ROUNDS=5 SECONDS_PER_RUN=6 benches/patch-mode/run.sh
#
# The server runs on core 1 (`taskset`), wrk -t1 -c64 on core 0, on two routes: `GET /`
# ("hello": the layer's timer is created and dropped unpolled) and `GET /tick` (the
# handler awaits a 1 ms `tokio::time::sleep`: on `compat` a timer of the second runtime).
# CPU per request is the server process's utime + stime (all its threads) over the run,
# divided by the requests wrk counted. Loopback only; every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}
PORT=${PORT:-8093}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }

# patch mode, as committed.
CARGO_TARGET_DIR=target/patch-app cargo build --quiet --release --manifest-path examples/patch-mode/Cargo.toml
# The same source without the [patch] section: a copy whose manifest ends before it.
COPY=target/patch-bench/tokio-app
rm -rf "$COPY" && mkdir -p "$COPY"
cp -r examples/patch-mode/src "$COPY/"
sed '/^\[patch.crates-io\]/,$d' examples/patch-mode/Cargo.toml > "$COPY/Cargo.toml"
CARGO_TARGET_DIR=target/patch-bench/build cargo build --quiet --release --manifest-path "$COPY/Cargo.toml"
if CARGO_TARGET_DIR=target/patch-bench/build cargo tree --manifest-path "$COPY/Cargo.toml" -e normal --prefix none \
    | grep -q '^tokio v1.999'; then
    echo "the tokio build still has netloop's tokio" >&2
    exit 1
fi
# tokio-compat, the route and layer of the renamed application.
CARGO_TARGET_DIR=target/compat cargo build --quiet --release --manifest-path tests/compat/Cargo.toml --example axum_timeout

TCK=$(getconf CLK_TCK)
source benches/wrk_window.sh

measure() { # kind path -> "requests ticks"
    case "$1" in
        patch) wrk_window "$PORT" "$2" "$SECONDS_PER_RUN" taskset -c 1 "$ROOT/target/patch-app/release/netloop-patch-mode-app" "$PORT" 1 ;;
        tokio) wrk_window "$PORT" "$2" "$SECONDS_PER_RUN" taskset -c 1 "$ROOT/target/patch-bench/build/release/netloop-patch-mode-app" "$PORT" 1 ;;
        compat) wrk_window "$PORT" "$2" "$SECONDS_PER_RUN" taskset -c 1 "$ROOT/target/compat/release/examples/axum_timeout" netloop timeout "$PORT" ;;
    esac
}

KINDS="patch tokio compat"
PATHS="/ /tick"
declare -A REQS TICKS
for round in $(seq "$ROUNDS"); do
    # The order rotates from round to round, so that a slow patch of the machine hits
    # every server alike.
    set -- $KINDS
    for _ in $(seq $(( (round - 1) % 3 ))); do set -- "${@:2}" "$1"; done
    for path in $PATHS; do
        for kind in "$@"; do
            read -r reqs ticks < <(measure "$kind" "$path")
            REQS[$kind$path]=$(( ${REQS[$kind$path]:-0} + reqs ))
            TICKS[$kind$path]=$(( ${TICKS[$kind$path]:-0} + ticks ))
            echo "round $round: $kind $path: $reqs requests, $ticks ticks" >&2
        done
    done
done

echo "| route | server | req/s | req/s / tokio's | CPU µs per request | CPU / tokio's |"
echo "|---|---|---|---|---|---|"
for path in $PATHS; do
    for kind in $KINDS; do
        awk -v n="${REQS[$kind$path]}" -v t="${REQS[tokio$path]}" -v nt="${TICKS[$kind$path]}" \
            -v tt="${TICKS[tokio$path]}" -v s=$((ROUNDS * SECONDS_PER_RUN)) -v tck="$TCK" \
            -v kind="$kind" -v path="$path" 'BEGIN {
            ncpu = nt / tck * 1e6 / n; tcpu = tt / tck * 1e6 / t
            printf "| `%s` | %s | %.0f | %.2f | %.2f | %.2f |\n", path, kind, n / s, n / t, ncpu, ncpu / tcpu
        }'
    done
done
