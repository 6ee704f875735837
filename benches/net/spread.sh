#!/usr/bin/env bash
# Does the tokio-shaped server (accept in a loop, spawn per connection) use every worker?
# The same source (examples/accept_spawn.rs) on netloop and on tokio multi_thread, two
# workers each, under `wrk -t1 -c$CONNECTIONS`, server and client sharing both cores.
#
#   benches/net/spread.sh                          # about 3 minutes
#   ROUNDS=2 RUN_SECONDS=3 SHAPES=hello benches/net/spread.sh
#
# Shapes:
#   hello   every request answered with the hello response at once
#   work    every request first costs about $WORK_US us of CPU (hashing, calibrated here
#           by `accept_spawn --calibrate`): using both cores is what decides req/s
# ACCEPT_IN=main runs the accept loop in block_on (the body of #[tokio::main]); task in a
# spawned task. For each shape both servers start once; then ROUNDS times, in an order
# that alternates, each gets a $RUN_SECONDS wrk window. Around each window the script
# reads every server thread's utime+stime from /proc/PID/task/*/stat. Reported per
# server: requests/s (all requests / all seconds), CPU per request of the whole process,
# and each worker thread's share of the workers' CPU (50/50 is even). Loopback only;
# every server exits by itself after --max-seconds.
set -euo pipefail
trap 'echo "spread.sh: line $LINENO: a command failed (exit $?)" >&2' ERR

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

ROUNDS=${ROUNDS:-4}
RUN_SECONDS=${RUN_SECONDS:-4}
CONNECTIONS=${CONNECTIONS:-64}
WORKERS=${WORKERS:-2}
WORK_US=${WORK_US:-20}
SHAPES=${SHAPES:-"hello work"}
ACCEPT_IN=${ACCEPT_IN:-main}
RUNTIMES=${RUNTIMES:-"netloop tokio"}
OUT=${OUT:-$ROOT/target/spread-bench}
mkdir -p "$OUT"
: > "$OUT/results.tsv"

command -v wrk >/dev/null || { echo "spread.sh needs wrk (apt-get install wrk)" >&2; exit 1; }
# BIN=path runs another build of the server (say, of an earlier commit) instead.
if [ -z "${BIN:-}" ]; then
    cargo build --release -q -p netloop-benches --example accept_spawn
    BIN=$ROOT/target/release/examples/accept_spawn
fi
TICK=$(getconf CLK_TCK)
# WORK_ITERS pins the work per request (to compare runs); otherwise it is calibrated.
ITERS=${WORK_ITERS:-$("$BIN" --calibrate "$WORK_US")}
echo "work: $ITERS hash iterations per request (about $WORK_US us here)"

# Prints "tid name ticks" for every thread of process $1.
thread_ticks() {
    local t
    for t in /proc/"$1"/task/*; do
        [ -r "$t/stat" ] || continue
        printf '%s %s %s\n' "${t##*/}" "$(tr ' ' '_' < "$t/comm")" \
            "$(sed 's/^.*) //' "$t/stat" | awk '{print $12 + $13}')"
    done
}

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

for shape in $SHAPES; do
    iters=0
    [ "$shape" = work ] && iters=$ITERS
    declare -A PID=() PORT=()
    for rt in $RUNTIMES; do
        log=$OUT/$shape-$rt.server.log
        "$BIN" --runtime "$rt" --workers "$WORKERS" --work-iters "$iters" \
            --accept-in "$ACCEPT_IN" --max-seconds $((ROUNDS * (RUN_SECONDS + 5) * 3 + 60)) > "$log" 2>&1 &
        PID[$rt]=$!
        PIDS+=("$!")
        for _ in $(seq 100); do grep -q '^listening' "$log" && break; sleep 0.05; done
        PORT[$rt]=$(awk '/^listening/ {n = split($2, a, ":"); print a[n]}' "$log")
        [ -n "${PORT[$rt]}" ] || { echo "the $rt server did not start: $(cat "$log")" >&2; exit 1; }
        # Warm up: connections made, pages touched.
        wrk -t1 -c"$CONNECTIONS" -d1s "http://127.0.0.1:${PORT[$rt]}/" > /dev/null
    done
    for round in $(seq "$ROUNDS"); do
        order=$RUNTIMES
        [ $((round % 2)) = 0 ] && order=$(echo "$RUNTIMES" | tr ' ' '\n' | tac | tr '\n' ' ')
        for rt in $order; do
            pid=${PID[$rt]}
            thread_ticks "$pid" > "$OUT/before"
            wrk -t1 -c"$CONNECTIONS" -d"${RUN_SECONDS}s" "http://127.0.0.1:${PORT[$rt]}/" > "$OUT/wrk.txt"
            thread_ticks "$pid" > "$OUT/after"
            requests=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
            # One line per thread: shape, runtime, round, requests, name@tid, ticks used.
            awk -v shape="$shape" -v rt="$rt" -v round="$round" -v req="$requests" \
                'NR == FNR {b[$1] = $3; next} {print shape "\t" rt "\t" round "\t" req "\t" $2 "@" $1 "\t" $3 - b[$1]}' \
                "$OUT/before" "$OUT/after" >> "$OUT/results.tsv"
        done
    done
    for rt in $RUNTIMES; do kill "${PID[$rt]}" 2>/dev/null || true; done
    unset PID PORT
done

# The table: per shape and runtime, req/s, CPU per request and the workers' shares.
awk -v secs="$RUN_SECONDS" -v tick="$TICK" -F'\t' '
    {
        key = $1 SUBSEP $2
        if (!((key, $3) in seen)) { seen[key, $3] = 1; req[key] += $4; windows[key]++ }
        cpu[key] += $6
        if ($5 ~ /^netloop-/ || $5 ~ /^tokio-r/) { w[key, $5] += $6; names[key] = names[key] " " $5 }
        if (!(key in order_seen)) { order_seen[key] = 1; order[++n] = key }
    }
    END {
        printf "| shape | runtime | req/s | CPU us/req (process) | workers CPU share | max off even |\n"
        printf "|---|---|---|---|---|---|\n"
        for (i = 1; i <= n; i++) {
            key = order[i]; split(key, k, SUBSEP)
            split(names[key], list, " "); delete uniq; total = 0; m = 0
            for (j in list) if (!(list[j] in uniq)) { uniq[list[j]] = 1; total += w[key, list[j]]; m++ }
            shares = ""; off = 0
            for (name in uniq) {
                s = total > 0 ? w[key, name] / total : 0
                shares = shares (shares == "" ? "" : "/") sprintf("%.0f", 100 * s)
                d = (s - 1 / m) * m; if (d < 0) d = -d; if (d > off) off = d
            }
            rps = req[key] / (windows[key] * secs)
            rate[k[1], k[2]] = rps
            printf "| %s | %s | %.0f | %.2f | %s | %.0f%% |\n", k[1], k[2], rps, 1e6 * cpu[key] / tick / req[key], shares, 100 * off
        }
        for (i = 1; i <= n; i++) {
            key = order[i]; split(key, k, SUBSEP)
            if (k[2] == "netloop" && ((k[1], "tokio") in rate))
                printf "%s: netloop / tokio req/s = %.2f\n", k[1], rate[k[1], "netloop"] / rate[k[1], "tokio"]
        }
    }' "$OUT/results.tsv" | tee "$OUT/report.md"
