#!/usr/bin/env bash
# axum hello, with and without tower-http's timeout layer, on netloop (`tokio-compat`:
# tokio's runtime beside the loops, entered on every netloop thread) and on tokio, the
# same source (tests/compat/examples/axum_timeout.rs), one worker each.
#
#   benches/compat/run.sh                 # 3 rounds of 4 s per server, about 2 min
#   ROUNDS=5 SECONDS_PER_RUN=6 benches/compat/run.sh
#
# The server runs on core 1 (`taskset`), wrk -t1 -c64 on core 0. CPU per request is the
# server process's utime + stime (all its threads: netloop's loop and the compat
# runtime's worker) over the run, divided by the requests wrk counted. Loopback only;
# every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}
PORT=${PORT:-8091}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
CARGO_TARGET_DIR=target/compat cargo build --quiet --release \
    --manifest-path tests/compat/Cargo.toml --example axum_timeout
BIN=target/compat/release/examples/axum_timeout
TCK=$(getconf CLK_TCK)

source benches/wrk_window.sh

measure() { # runtime layer -> "requests ticks"
    wrk_window "$PORT" / "$SECONDS_PER_RUN" taskset -c 1 "$BIN" "$1" "$2" "$PORT"
}

declare -A REQS TICKS
for round in $(seq "$ROUNDS"); do
    for layer in timeout plain; do
        for rt in netloop tokio; do
            read -r reqs ticks < <(measure "$rt" "$layer")
            REQS[$rt-$layer]=$(( ${REQS[$rt-$layer]:-0} + reqs ))
            TICKS[$rt-$layer]=$(( ${TICKS[$rt-$layer]:-0} + ticks ))
            echo "round $round: $rt $layer: $reqs requests, $ticks ticks" >&2
        done
    done
done

echo "| server | netloop req/s | tokio req/s | req/s netloop/tokio | CPU µs/req netloop / tokio | CPU netloop/tokio |"
echo "|---|---|---|---|---|---|"
for layer in timeout plain; do
    n=${REQS[netloop-$layer]} t=${REQS[tokio-$layer]}
    nt=${TICKS[netloop-$layer]} tt=${TICKS[tokio-$layer]}
    awk -v n="$n" -v t="$t" -v nt="$nt" -v tt="$tt" -v s=$((ROUNDS * SECONDS_PER_RUN)) -v tck="$TCK" -v layer="$layer" 'BEGIN {
        ncpu = nt / tck * 1e6 / n; tcpu = tt / tck * 1e6 / t
        printf "| axum hello, %s | %.0f | %.0f | %.2f | %.2f / %.2f | %.2f |\n",
            (layer == "timeout" ? "TimeoutLayer" : "no layer"), n / s, t / s, n / t, ncpu, tcpu, ncpu / tcpu
    }'
done
