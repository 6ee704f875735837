#!/usr/bin/env bash
# Network benchmarks: every server x load shape, the server on one core, the load on the other.
#
#   benches/net/run.sh                      # everything, about 11 minutes
#   ROUNDS=1 SERVERS="mio netloop" SHAPES="echo-64 http-wrk" benches/net/run.sh
#   benches/net/run.sh --report             # the tables and chart again, from $OUT's last results
#
# Servers (examples/net_server, one thread/worker/loop each): mio (the floor: a hand-written
# mio loop), futures-floor (the least a futures executor does: the same handlers as the
# runtimes, on mio with nothing else), netloop, tokio-mt, tokio-ct-reuseport, smol.
# Shapes, 64 connections each:
#   echo-64, echo-1k           echo ping-pong of 64 B / 1 KiB, closed loop (examples/net_client,
#                              plain mio on one thread, spinning: it never sleeps)
#   echo-64-rate, echo-1k-rate the same paced at $RATE round trips/s in all
#   http-wrk                   the HTTP hello server under `wrk -t1 -c64`, closed loop
#   http-rate                  the same server paced at $RATE requests/s (net_client: wrk cannot pace)
#
# The host is a shared VM whose speed drifts over seconds to minutes, so servers are compared
# in short interleaved windows rather than one long run each. For each shape:
#   1. start every server under `taskset -c $SERVER_CORE`, each on its own loopback port
#      (an idle server blocks in epoll_wait and uses no CPU);
#   2. ROUNDS times, for every server in an order that rotates each round: read the
#      server's utime + stime (fields 14 and 15 of /proc/PID/stat, ticks of
#      `getconf CLK_TCK`) and the CPU time of every other process, run the load under
#      `taskset -c $CLIENT_CORE` against that server for $RUN_SECONDS, read the times
#      again. If other processes (anything outside this script's process tree, plus the
#      idle servers) used more than $MAX_OTHER % of a core meanwhile, the window is
#      measured again (up to $MAX_TRIES times in all);
#   3. count each server's syscalls in a separate run of $SYSCALL_SECONDS, so that counting
#      never touches a timed window: `perf stat -e raw_syscalls:sys_enter` (plus the common
#      syscalls one by one, for the mix) attached to the server's PID; `strace -c -f -p PID`
#      if perf cannot;
#   4. kill the servers.
# Server CPU per request = all its windows' CPU ticks / all their requests answered;
# requests/s = all requests / all seconds. The tables go to stdout and $OUT/report.md, the
# chart (benches/net/chart.py) to $CHART (docs/benchmarks.svg),
# raw outputs to $OUT. Only loopback addresses are used; every step is bounded in time:
# the waits for a quiet machine and the repeated windows stop once they have added
# $EXTRA_BUDGET s in all.
set -euo pipefail
trap 'echo "run.sh: line $LINENO: a command failed (exit $?)" >&2' ERR

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

ROUNDS=${ROUNDS:-6}
RUN_SECONDS=${RUN_SECONDS:-2}
SYSCALL_SECONDS=${SYSCALL_SECONDS:-2}
RATE=${RATE:-50000}
CONNECTIONS=${CONNECTIONS:-64}
SERVERS=${SERVERS:-"mio futures-floor netloop tokio-mt tokio-ct-reuseport smol"}
SHAPES=${SHAPES:-"echo-64 echo-1k echo-64-rate echo-1k-rate http-wrk http-rate"}
SERVER_CORE=${SERVER_CORE:-1}
CLIENT_CORE=${CLIENT_CORE:-0}
OUT=${OUT:-$ROOT/target/net-bench}
SYSCALL_TOOL=${SYSCALL_TOOL:-auto}
MAX_OTHER=${MAX_OTHER:-5}
MAX_TRIES=${MAX_TRIES:-3}
QUIET_WAIT=${QUIET_WAIT:-20}
EXTRA_BUDGET=${EXTRA_BUDGET:-60}

REPORT_ONLY=0
if [ "${1:-}" = --report ]; then REPORT_ONLY=1; fi
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
if [ $REPORT_ONLY = 1 ]; then
    [ -s "$RESULTS" ] || { echo "no $RESULTS to report on: run the benchmarks first" >&2; exit 1; }
else
    rm -f "$OUT"/*.log "$OUT"/*.txt "$OUT"/*.times "$RESULTS" "$OUT"/report.md
fi

# --- tools -------------------------------------------------------------------------------
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
if [ $REPORT_ONLY = 0 ] && ! command -v wrk >/dev/null; then
    echo "installing wrk (Debian package)..." >&2
    as_root apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq wrk >/dev/null
fi
for tool in taskset getconf wrk awk timeout; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
# The syscalls counted one by one for the mix (the total is raw_syscalls:sys_enter).
MIX_SYSCALLS="epoll_wait epoll_pwait epoll_pwait2 epoll_ctl recvfrom sendto read write readv writev
    futex accept4 ioctl fcntl timerfd_settime sched_yield close shutdown setsockopt getsockopt"
PERF_EVENTS=raw_syscalls:sys_enter
for s in $MIX_SYSCALLS; do PERF_EVENTS="$PERF_EVENTS,syscalls:sys_enter_$s"; done
if [ "$SYSCALL_TOOL" = auto ]; then
    if command -v perf >/dev/null && perf stat -x, -e "$PERF_EVENTS" -- true >/dev/null 2>&1; then
        SYSCALL_TOOL=perf
    elif command -v strace >/dev/null; then
        SYSCALL_TOOL=strace
    else
        SYSCALL_TOOL=none
    fi
fi
TCK=$(getconf CLK_TCK)

if [ $REPORT_ONLY = 0 ]; then
    echo "building (release)..." >&2
    cargo build --release -q -p netloop-benches --example net_server --example net_client
fi
BIN=$ROOT/target/release/examples

# --- helpers ------------------------------------------------------------------------------
declare -A PIDS=() ADDRS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

# utime + stime of a process, in clock ticks (0 if it is gone).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# "UTIME STIME" of a process, in clock ticks.
cpu_split() {
    awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$1/stat" 2>/dev/null ||
        { echo "run.sh: server process $1 is gone" >&2; exit 1; }
}

# others_ticks: CPU ticks (utime + stime + reaped children's) used so far by every process
# outside this script's process tree, one "PID TICKS" line each.
others_ticks() {
    # cat fails when a process exits between the glob and the read: that is expected.
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v me=$$ '
        { pid = $1; sub(/^.*\) /, ""); ppid[pid] = $2; t[pid] = $12 + $13 + $14 + $15 }
        END {
            for (p in t) {
                q = p; ours = 0
                for (depth = 0; depth < 64 && q > 1; depth++) { if (q == me) { ours = 1; break } q = ppid[q] }
                if (!ours) print p, t[p]
            }
        }'
}
# others_delta BEFORE AFTER: ticks the other processes used between two snapshots (a
# process that appeared meanwhile counts whole).
others_delta() { awk 'NR == FNR { b[$1] = $2; next } { d += $2 - b[$1] } END { print d + 0 }' "$1" "$2"; }

# wait_quiet: until the other processes used less than MAX_OTHER % of a core over half a
# second, for at most QUIET_WAIT s and while the extra-time budget lasts.
wait_quiet() {
    local start=$SECONDS
    while :; do
        others_ticks >"$OUT/quiet.0.txt"
        sleep 0.5
        others_ticks >"$OUT/quiet.1.txt"
        [ "$(others_delta "$OUT/quiet.0.txt" "$OUT/quiet.1.txt")" -le $((TCK * MAX_OTHER / 200)) ] && return 0
        if [ $((SECONDS - start)) -ge "$QUIET_WAIT" ] || [ "$SECONDS" -ge "$EXTRA_DEADLINE" ]; then
            echo "  (the machine is still busy after $((SECONDS - start)) s: measuring anyway)" >&2
            return 0
        fi
    done
}

shape_label() {
    case $1 in
        echo-64) echo "echo 64 B, closed loop" ;;
        echo-1k) echo "echo 1 KiB, closed loop" ;;
        echo-64-rate) echo "echo 64 B, fixed $RATE/s" ;;
        echo-1k-rate) echo "echo 1 KiB, fixed $RATE/s" ;;
        http-wrk) echo "HTTP, wrk closed loop" ;;
        http-rate) echo "HTTP, fixed $RATE/s" ;;
        *) echo "$1" ;;
    esac
}

# Table rows "| SHAPE | ..." with the shape's label in place of its name.
label_rows() {
    local line shape
    while IFS= read -r line; do
        shape=${line#| }
        shape=${shape%% |*}
        printf '| %s |%s\n' "$(shape_label "$shape")" "${line#| "$shape" |}"
    done
}

# The tables, from $RESULTS (and the syscall mixes in $OUT).
write_report() {
    {
        echo "Server on core $SERVER_CORE, load on core $CLIENT_CORE (\`taskset\`), one thread per server, $CONNECTIONS" \
            "connections; $ROUNDS windows of $RUN_SECONDS s per server and shape, servers interleaved. CPU = the" \
            "server's utime + stime from /proc/PID/stat (CLK_TCK $TCK), summed over its windows, divided by the" \
            "requests answered in them (in brackets: the lowest and highest window). Syscalls: one separate" \
            "$SYSCALL_SECONDS s run per server and shape ($SYSCALL_TOOL)."
        echo
        echo "| shape | server | requests/s | server CPU µs/req (windows) | syscalls/req | CPU/req vs mio | CPU/req vs tokio-mt | req/s vs tokio-mt | server core busy | others, % of a core (max) |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        awk -F'\t' -v tck="$TCK" -v shapes="$SHAPES" -v servers="$SERVERS" '
            NR == 1 { next }
            $1 == 0 { if ($10 > 0) sys[$2 SUBSEP $3] = $9 / $10; next }
            {
                k = $2 SUBSEP $3
                req[k] += $4; sec[k] += $5; tic[k] += $6
                w = ($4 > 0 ? $6 / tck * 1e6 / $4 : 0)
                if (!(k in lo) || w < lo[k]) lo[k] = w
                if (!(k in hi) || w > hi[k]) hi[k] = w
                o = ($5 > 0 ? $7 / tck / $5 * 100 : 0)
                if (!(k in oth) || o > oth[k]) oth[k] = o
            }
            function ratio(a, b) { return (b > 0 ? sprintf("%.2f", a / b) : "—") }
            END {
                ns = split(shapes, sh, " "); nv = split(servers, sv, " ")
                for (k in req) {
                    R[k] = (sec[k] > 0 ? req[k] / sec[k] : 0)
                    C[k] = (req[k] > 0 ? tic[k] / tck * 1e6 / req[k] : 0)
                    U[k] = (sec[k] > 0 ? tic[k] / tck / sec[k] * 100 : 0)
                }
                for (i = 1; i <= ns; i++) for (j = 1; j <= nv; j++) {
                    k = sh[i] SUBSEP sv[j]
                    if (!(k in req)) continue
                    m = sh[i] SUBSEP "mio"; t = sh[i] SUBSEP "tokio-mt"
                    printf "| %s | %s | %.0f | %.2f (%.2f–%.2f) | %s | %s | %s | %s | %.0f %% | %.0f |\n", sh[i], sv[j], R[k],
                        C[k], lo[k], hi[k], ((k in sys) ? sprintf("%.2f", sys[k]) : "—"),
                        ((m in C) ? ratio(C[k], C[m]) : "—"), ((t in C) ? ratio(C[k], C[t]) : "—"),
                        ((t in R) ? ratio(R[k], R[t]) : "—"), U[k], (oth[k] > 0 ? oth[k] : 0)
                }
            }' "$RESULTS" | label_rows
        echo
        echo "User-space CPU per request in the closed-loop shapes: the server's utime alone (field 14 of" \
            "/proc/PID/stat), over the same windows. The kernel's part is the same work for every server (the" \
            "same syscalls and loopback path) and moves with the host; the user part is what each runtime" \
            "adds. The kernel splits CPU time into user and system by sampling at its ticks, which is fair" \
            "for a busy core but not for the short bursts of the fixed-rate shapes (windows from 0 to several" \
            "µs), so those are left out: benches/net/instructions.sh measures that case."
        echo
        echo "| shape | server | user µs/req (windows) | user vs mio | user vs tokio-mt |"
        echo "|---|---|---|---|---|"
        awk -F'\t' -v tck="$TCK" -v shapes="$SHAPES" -v servers="$SERVERS" '
            NR == 1 || $1 == 0 || $2 ~ /-rate$/ { next }
            {
                k = $2 SUBSEP $3
                req[k] += $4; usr[k] += $11
                w = ($4 > 0 ? $11 / tck * 1e6 / $4 : 0)
                if (!(k in lo) || w < lo[k]) lo[k] = w
                if (!(k in hi) || w > hi[k]) hi[k] = w
            }
            function ratio(a, b) { return (b > 0 ? sprintf("%.2f", a / b) : "—") }
            END {
                ns = split(shapes, sh, " "); nv = split(servers, sv, " ")
                for (k in req) C[k] = (req[k] > 0 ? usr[k] / tck * 1e6 / req[k] : 0)
                for (i = 1; i <= ns; i++) for (j = 1; j <= nv; j++) {
                    k = sh[i] SUBSEP sv[j]
                    if (!(k in req)) continue
                    m = sh[i] SUBSEP "mio"; t = sh[i] SUBSEP "tokio-mt"
                    printf "| %s | %s | %.2f (%.2f–%.2f) | %s | %s |\n", sh[i], sv[j], C[k], lo[k], hi[k],
                        ((m in C) ? ratio(C[k], C[m]) : "—"), ((t in C) ? ratio(C[k], C[t]) : "—")
                }
            }' "$RESULTS" | label_rows
        echo
        echo "Syscalls per request in the separate run, the four most frequent ($SYSCALL_TOOL):"
        echo
        echo "| shape | server | syscall mix per request |"
        echo "|---|---|---|"
        for shape in $SHAPES; do
            for server in $SERVERS; do
                mixfile=$OUT/$shape.$server.syscalls.mix.txt
                [ -s "$mixfile" ] || continue
                reqs=$(awk -F'\t' -v a="$shape" -v b="$server" '$1 == 0 && $2 == a && $3 == b { print $10 }' "$RESULTS")
                mix=$(awk '$2 != "TOTAL"' "$mixfile" | head -4 |
                    awk -v r="$reqs" '{ printf "%s%s %.3f", (NR > 1 ? ", " : ""), $2, (r > 0 ? $1 / r : 0) }')
                echo "| $(shape_label "$shape") | $server | $mix |"
            done
        done
    } | tee "$OUT/report.md"
}

# The chart of the same results (docs/benchmarks.svg by default, linked from the README).
CHART=${CHART:-$ROOT/docs/benchmarks.svg}
write_chart() {
    python3 "$ROOT/benches/net/chart.py" "$RESULTS" "$CHART" && echo "chart: $CHART" >&2
}

if [ $REPORT_ONLY = 1 ]; then
    write_report
    write_chart
    exit 0
fi

# load_cmd SHAPE ADDR SECONDS: the load generator's command line.
load_cmd() {
    local shape=$1 addr=$2 secs=$3 client
    client="$BIN/net_client --addr $addr --connections $CONNECTIONS --seconds $secs"
    case $shape in
        echo-64) echo "$client --mode echo --size 64" ;;
        echo-1k) echo "$client --mode echo --size 1024" ;;
        echo-64-rate) echo "$client --mode echo --size 64 --rate $RATE" ;;
        echo-1k-rate) echo "$client --mode echo --size 1024 --rate $RATE" ;;
        http-wrk) echo "wrk -t1 -c$CONNECTIONS -d${secs}s http://$addr/" ;;
        http-rate) echo "$client --mode http --rate $RATE" ;;
        *) echo "unknown shape $shape" >&2; exit 1 ;;
    esac
}

# run_load SHAPE ADDR SECONDS LOGFILE -> "REQUESTS SECONDS": requests answered in all and the
# load's duration (net_client's `total` and `seconds`; wrk's "N requests in Xs").
run_load() {
    local shape=$1 log=$4 n s cmd
    cmd=$(load_cmd "$shape" "$2" "$3")
    # shellcheck disable=SC2086
    timeout $(($3 + 20)) taskset -c "$CLIENT_CORE" $cmd >"$log" 2>&1 || true
    if [ "$shape" = http-wrk ]; then
        read -r n s < <(awk '/requests in/ { n = $1; s = $4; sub(/s,?$/, "", s); print n, s }' "$log")
    else
        read -r n s < <(awk '/^requests=/ {
            for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } print v["total"], v["seconds"] }' "$log")
    fi
    echo "${n:-0} ${s:-0}"
}

# start_server RUNTIME MODE LOG -> sets PIDS[RUNTIME] and ADDRS[RUNTIME].
start_server() {
    local pid addr=
    : >"$3"
    taskset -c "$SERVER_CORE" "$BIN/net_server" --runtime "$1" --mode "$2" --addr 127.0.0.1:0 --threads 1 \
        --max-seconds "$SERVER_MAX_SECONDS" >"$3" 2>&1 &
    pid=$!
    PIDS[$1]=$pid
    for _ in $(seq 100); do
        addr=$(awk '/^listening / { print $2 }' "$3" || true)
        [ -n "$addr" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$addr" ]; then
        echo "server $1 did not start:" >&2
        cat "$3" >&2
        exit 1
    fi
    ADDRS[$1]=$addr
}

stop_servers() {
    cleanup
    PIDS=()
    ADDRS=()
}

# count_syscalls SHAPE SERVER PREFIX -> "SYSCALLS REQUESTS" for a load of SYSCALL_SECONDS;
# the per-syscall counts go to PREFIX.mix.txt.
count_syscalls() {
    local shape=$1 pid=${PIDS[$2]} prefix=$3 tracer load
    case $SYSCALL_TOOL in
        perf) perf stat -x, -e "$PERF_EVENTS" -p "$pid" -o "$prefix.perf.txt" >/dev/null 2>&1 & ;;
        strace) strace -c -f -p "$pid" -o "$prefix.strace.txt" >/dev/null 2>&1 & ;;
        *) echo "0 0"; return ;;
    esac
    tracer=$!
    sleep 1 # let the tracer attach to every thread
    load=$(run_load "$shape" "${ADDRS[$2]}" "$SYSCALL_SECONDS" "$prefix.load.log")
    kill -INT "$tracer" 2>/dev/null || true
    wait "$tracer" 2>/dev/null || true
    case $SYSCALL_TOOL in
        perf)
            awk -F, '$3 == "raw_syscalls:sys_enter" && $1 ~ /^[0-9]+$/ { print $1, "TOTAL" }
                     $3 ~ /^syscalls:sys_enter_/ && $1 ~ /^[0-9]+$/ && $1 > 0 {
                         sub(/^syscalls:sys_enter_/, "", $3); print $1, $3 }' "$prefix.perf.txt" |
                sort -rn >"$prefix.mix.txt"
            ;;
        strace)
            # "% time  seconds  usecs/call  calls  [errors]  syscall", then a "total" line.
            awk '$1 ~ /^[0-9.]+$/ && NF >= 5 && $4 ~ /^[0-9]+$/ { print $4, ($NF == "total" ? "TOTAL" : $NF) }' \
                "$prefix.strace.txt" | sort -rn >"$prefix.mix.txt"
            ;;
    esac
    echo "$(awk '$2 == "TOTAL" { print $1 }' "$prefix.mix.txt") ${load%% *}"
}

# --- the matrix ---------------------------------------------------------------------------
read -r -a servers <<<"$SERVERS"
n_servers=${#servers[@]}
n_shapes=$(wc -w <<<"$SHAPES")
# Per shape: the windows (each adds about 0.3 s to its load), the syscall runs (1 s to
# attach), a quiet check and the servers' start.
estimate=$((n_shapes * (n_servers * (ROUNDS * (RUN_SECONDS * 10 + 3) / 10 + SYSCALL_SECONDS + 1) + 2)))
SERVER_MAX_SECONDS=$((n_servers * (ROUNDS * (RUN_SECONDS + 1) + SYSCALL_SECONDS + 2) + EXTRA_BUDGET + 60))
echo "servers: $SERVERS" >&2
echo "shapes: $SHAPES; $ROUNDS interleaved windows of $RUN_SECONDS s per server and shape;" \
    "syscalls counted in one more run ($SYSCALL_TOOL, $SYSCALL_SECONDS s)" >&2
echo "estimated time: about $((estimate / 60 + 1)) min (at most $(((estimate + EXTRA_BUDGET) / 60 + 1)) min on a busy machine)" >&2
EXTRA_DEADLINE=$((SECONDS + estimate + EXTRA_BUDGET))
printf 'round\tshape\tserver\trequests\tseconds\tcpu_ticks\tother_ticks\ttries\tsyscalls\tsys_requests\tuser_ticks\n' >"$RESULTS"
for shape in $SHAPES; do
    case $shape in http-*) mode=http ;; *) mode=echo ;; esac
    for server in "${servers[@]}"; do
        start_server "$server" "$mode" "$OUT/$shape.$server.server.log"
    done
    wait_quiet
    for round in $(seq "$ROUNDS"); do
        for i in $(seq 0 $((n_servers - 1))); do
            server=${servers[$(((i + round - 1) % n_servers))]}
            pid=${PIDS[$server]}
            tries=0
            while :; do
                tries=$((tries + 1))
                others_ticks >"$OUT/others.0.txt"
                idle0=0
                for s in "${servers[@]}"; do [ "$s" = "$server" ] || idle0=$((idle0 + $(cpu_ticks "${PIDS[$s]}"))); done
                read -r u0 s0 <<<"$(cpu_split "$pid")"
                read -r requests secs <<<"$(run_load "$shape" "${ADDRS[$server]}" "$RUN_SECONDS" "$OUT/$shape.$server.$round.load.log")"
                read -r u1 s1 <<<"$(cpu_split "$pid")"
                if [ -z "${u0:-}" ] || [ -z "${u1:-}" ]; then
                    echo "run.sh: the $server server is gone:" >&2
                    cat "$OUT/$shape.$server.server.log" >&2
                    exit 1
                fi
                idle1=0
                for s in "${servers[@]}"; do [ "$s" = "$server" ] || idle1=$((idle1 + $(cpu_ticks "${PIDS[$s]}"))); done
                others_ticks >"$OUT/others.1.txt"
                other=$(($(others_delta "$OUT/others.0.txt" "$OUT/others.1.txt") + idle1 - idle0))
                other_pct=$(awk -v o="$other" -v t="$TCK" -v s="$secs" 'BEGIN { print (s > 0 ? int(o / t / s * 100) : 100) }')
                if [ "$other_pct" -le "$MAX_OTHER" ] || [ "$tries" -ge "$MAX_TRIES" ] || [ "$SECONDS" -ge "$EXTRA_DEADLINE" ]; then
                    break
                fi
                echo "  $shape $server: other processes used ${other_pct} % of a core; measuring again" >&2
            done
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\t0\t%s\n' "$round" "$shape" "$server" "${requests:-0}" "${secs:-0}" \
                $((u1 + s1 - u0 - s0)) "$other" "$tries" $((u1 - u0)) >>"$RESULTS"
        done
    done
    for server in "${servers[@]}"; do
        read -r syscalls sys_requests <<<"$(count_syscalls "$shape" "$server" "$OUT/$shape.$server.syscalls")"
        printf '0\t%s\t%s\t0\t0\t0\t0\t0\t%s\t%s\t0\n' "$shape" "$server" "${syscalls:-0}" "${sys_requests:-0}" >>"$RESULTS"
    done
    stop_servers
    awk -F'\t' -v tck="$TCK" -v shape="$shape" '
        $2 == shape && $1 > 0 { r[$3] += $4; s[$3] += $5; c[$3] += $6; if (!($3 in seen)) { seen[$3] = 1; o[++n] = $3 } }
        $2 == shape && $1 == 0 && $10 > 0 { y[$3] = $9 / $10 }
        END { for (i = 1; i <= n; i++) { k = o[i]
            printf "%-13s %-19s %8.0f req/s %6.2f us CPU/req %5.2f syscalls/req\n", shape, k,
                (s[k] > 0 ? r[k] / s[k] : 0), (r[k] > 0 ? c[k] / tck * 1e6 / r[k] : 0), y[k] } }' "$RESULTS" >&2
done

# --- report -------------------------------------------------------------------------------
write_report
write_chart
