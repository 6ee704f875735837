#!/usr/bin/env bash
# Network benchmarks: every server x load shape, the server on one core, the load on the other.
#
#   benches/net/run.sh                      # everything, about 11 minutes
#   ROUNDS=1 SERVERS="mio netloop" SHAPES="echo-64 http-wrk" benches/net/run.sh
#   benches/net/run.sh --report             # the tables and chart again, from $OUT's last results
#   benches/net/uring.sh                    # issue 43's io_uring matrix (this script, preset below)
#   CONNECTIONS="1 64 1024" SHAPES="echo-64 echo-1k http" \
#       SERVERS="mio netloop netloop-uring monoio tokio-mt" benches/net/run.sh   # the same by hand
#
# Servers (examples/net_server, one thread/worker/loop each): mio (the floor: a hand-written
# mio loop), futures-floor (the least a futures executor does: the same handlers as the
# runtimes, on mio with nothing else), netloop, tokio-mt, tokio-ct-reuseport, smol, and
# issue 43's io_uring servers:
#   netloop-uring              the netloop server started with NETLOOP_IO_DRIVER=io_uring (netloop
#                              reads it: `epoll`, the default, or `io_uring`); `netloop` itself is
#                              started with NETLOOP_IO_DRIVER=epoll, so it stays the epoll build
#   monoio                     monoio 0.2 on its IoUringDriver (benches/monoio_peer/net.rs, built
#                              with net_server's `monoio` feature, which this script turns on)
# Which driver ran is checked, not assumed: once a server listens, and again after its last
# load, its /proc/PID/fd is read for `anon_inode:[io_uring]` links (and their
# /proc/PID/fdinfo's CqTail, the ring's completions). A netloop-uring or monoio server with
# no io_uring instance is not reported: its rows give way to a line saying so (the server
# ran on epoll, e.g. before netloop's io_uring driver lands). An epoll server with a ring is
# flagged. The per-server record is $OUT/drivers.tsv.
# Shapes, at each of $CONNECTIONS connections (64 unless set; a list such as "1 64 1024"
# runs every shape at each, the rows then named SHAPE@cN):
#   echo-64, echo-1k           echo ping-pong of 64 B / 1 KiB, closed loop (examples/net_client,
#                              plain mio on one thread, spinning: it never sleeps)
#   echo-64-rate, echo-1k-rate the same paced at $RATE round trips/s in all
#   http-wrk                   the HTTP hello server under `wrk -t1 -c64`, closed loop
#   http-rate                  the same server paced at $RATE requests/s (net_client: wrk cannot pace)
#   http                       the HTTP hello server under net_client's closed loop (what issue 43
#                              measures: one client for every shape, with p50/p99 at any connection
#                              count; wrk gives its percentiles too, through --latency)
# p50/p99 per row: the median over its windows of each window's percentile (net_client's
# own, or wrk's --latency distribution), in µs.
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
# raw outputs to $OUT. When netloop runs beside netloop-uring or monoio, one more table sets
# each against the epoll build (`netloop`) with issue 43's acceptance checks for
# netloop-uring: CPU/request at most 0.85x epoll's at 64 connections and more, and at most
# monoio's; at most 0.3 syscalls/request; p99 at most 1.1x epoll's. Syscalls are counted
# by perf's raw_syscalls:sys_enter, which counts io_uring_enter like any other (it is in the
# mix too). The fd limit is raised to the hard limit for the 1,024-connection shapes.
# Only loopback addresses are used; every step is bounded in time:
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

# The cases: every shape at every connection count, named SHAPE when there is one count
# (as before the counts could be listed) and SHAPE@cN when there are several.
read -r -a CONNS <<<"$CONNECTIONS"
[ ${#CONNS[@]} -gt 0 ] || { echo "CONNECTIONS is empty" >&2; exit 1; }
MAX_CONNS=0
for c in "${CONNS[@]}"; do
    [[ $c =~ ^[1-9][0-9]*$ ]] || { echo "CONNECTIONS: $c is not a positive number" >&2; exit 1; }
    [ "$c" -gt "$MAX_CONNS" ] && MAX_CONNS=$c
done
CASES=""
for shape in $SHAPES; do
    for c in "${CONNS[@]}"; do
        if [ ${#CONNS[@]} = 1 ]; then CASES="$CASES $shape"; else CASES="$CASES $shape@c$c"; fi
    done
done
CASES=${CASES# }
case_shape() { echo "${1%@c*}"; }
case_conns() { if [[ $1 == *@c* ]]; then echo "${1##*@c}"; else echo "${CONNS[0]}"; fi; }

# Each connection is an fd in the client and one in the server: raise the soft limit to
# the hard one if the largest count needs it.
need_fds=$((MAX_CONNS + 256))
if [ $REPORT_ONLY = 0 ] && [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need_fds" ]; then
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need_fds" ]; then
        echo "the fd limit is $(ulimit -n) (hard $(ulimit -Hn)); $MAX_CONNS connections need $need_fds: raise it" >&2
        exit 1
    fi
fi
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
# Per (case, server): the driver check (see the header).
DRIVERS=$OUT/drivers.tsv
# $RESULTS without the rows of servers that failed it: what the tables and chart read.
REPORTED=$OUT/results.reported.tsv
if [ $REPORT_ONLY = 1 ]; then
    [ -s "$RESULTS" ] || { echo "no $RESULTS to report on: run the benchmarks first" >&2; exit 1; }
else
    rm -f "$OUT"/*.log "$OUT"/*.txt "$OUT"/*.times "$RESULTS" "$DRIVERS" "$REPORTED" "$OUT"/report.md
fi

# --- tools -------------------------------------------------------------------------------
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
NEED_WRK=0
[[ " $SHAPES " == *" http-wrk "* ]] && NEED_WRK=1
if [ $REPORT_ONLY = 0 ] && [ $NEED_WRK = 1 ] && ! command -v wrk >/dev/null; then
    echo "installing wrk (Debian package)..." >&2
    as_root apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq wrk >/dev/null
fi
for tool in taskset getconf awk timeout $([ $NEED_WRK = 1 ] && echo wrk); do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
# The syscalls counted one by one for the mix (the total is raw_syscalls:sys_enter).
MIX_SYSCALLS="io_uring_enter epoll_wait epoll_pwait epoll_pwait2 epoll_ctl recvfrom sendto read write readv writev
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
    # With monoio (the `monoio` feature) whatever the servers, so that there is one
    # net_server binary and no rebuild between runs with and without it.
    cargo build --release -q -p netloop-benches --example net_server --example net_client --features monoio
fi
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples

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
    local suffix=
    [[ $1 == *@c* ]] && suffix=", ${1##*@c} conn."
    case ${1%@c*} in
        echo-64) echo "echo 64 B, closed loop$suffix" ;;
        echo-1k) echo "echo 1 KiB, closed loop$suffix" ;;
        echo-64-rate) echo "echo 64 B, fixed $RATE/s$suffix" ;;
        echo-1k-rate) echo "echo 1 KiB, fixed $RATE/s$suffix" ;;
        http-wrk) echo "HTTP, wrk closed loop$suffix" ;;
        http-rate) echo "HTTP, fixed $RATE/s$suffix" ;;
        http) echo "HTTP, closed loop$suffix" ;;
        *) echo "$1" ;;
    esac
}

# The driver each server kind must run on: io_uring for netloop-uring and monoio.
server_driver() { case $1 in netloop-uring | monoio) echo io_uring ;; *) echo epoll ;; esac; }

# refused_lines: one line per (case, server) whose server should have run on io_uring and
# had no io_uring instance, from $OUT/drivers.tsv.
refused_lines() {
    [ -s "$DRIVERS" ] || return 0
    awk -F'\t' 'NR > 1 && $4 == "io_uring" && ($5 == 0 || $6 == 0) {
        printf "%s %s: not reported: the server (PID %s) had no io_uring instance (%s at its start, %s after its load: no anon_inode:[io_uring] in /proc/%s/fd), so it did not run on io_uring\n",
            $1, $2, $3, $5, $6, $3 }' "$DRIVERS"
}

# epoll_ring_lines: epoll servers that held an io_uring instance all the same.
epoll_ring_lines() {
    [ -s "$DRIVERS" ] || return 0
    awk -F'\t' 'NR > 1 && $4 == "epoll" && ($5 > 0 || $6 > 0) {
        printf "%s %s: the epoll server (PID %s) held %s io_uring instance(s) (%s completions)\n", $1, $2, $3, ($5 > $6 ? $5 : $6), $7 }' "$DRIVERS"
}

# reported_results: $RESULTS without the refused (case, server) rows.
reported_results() {
    if [ -s "$DRIVERS" ]; then
        awk -F'\t' 'NR == FNR { if (FNR > 1 && $4 == "io_uring" && ($5 == 0 || $6 == 0)) bad[$1 SUBSEP $2] = 1; next }
            !(($2 SUBSEP $3) in bad)' "$DRIVERS" "$RESULTS"
    else
        cat "$RESULTS"
    fi >"$REPORTED"
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
    reported_results
    {
        if [ -n "$(refused_lines)" ]; then
            refused_lines | sed 's/^/**Not reported.** /; s/$/./'
            echo
        fi
        if [ -n "$(epoll_ring_lines)" ]; then
            epoll_ring_lines | sed 's/^/**Note.** /; s/$/./'
            echo
        fi
        echo "Server on core $SERVER_CORE, load on core $CLIENT_CORE (\`taskset\`), one thread per server, $CONNECTIONS" \
            "connections; $ROUNDS windows of $RUN_SECONDS s per server and shape, servers interleaved. CPU = the" \
            "server's utime + stime from /proc/PID/stat (CLK_TCK $TCK), summed over its windows, divided by the" \
            "requests answered in them (in brackets: the lowest and highest window). Syscalls: one separate" \
            "$SYSCALL_SECONDS s run per server and shape ($SYSCALL_TOOL)."
        echo
        echo "| shape | server | requests/s | server CPU µs/req (windows) | syscalls/req | CPU/req vs mio | CPU/req vs tokio-mt | req/s vs tokio-mt | server core busy | others, % of a core (max) |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        awk -F'\t' -v tck="$TCK" -v shapes="$CASES" -v servers="$SERVERS" '
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
            }' "$REPORTED" | label_rows
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
        awk -F'\t' -v tck="$TCK" -v shapes="$CASES" -v servers="$SERVERS" '
            NR == 1 || $1 == 0 || $2 ~ /-rate(@c[0-9]+)?$/ { next }
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
            }' "$REPORTED" | label_rows
        echo
        echo "Syscalls per request in the separate run, the four most frequent ($SYSCALL_TOOL):"
        echo
        echo "| shape | server | syscall mix per request |"
        echo "|---|---|---|"
        for shape in $CASES; do
            for server in $SERVERS; do
                mixfile=$OUT/$shape.$server.syscalls.mix.txt
                [ -s "$mixfile" ] || continue
                reqs=$(awk -F'\t' -v a="$shape" -v b="$server" '$1 == 0 && $2 == a && $3 == b { print $10 }' "$REPORTED")
                [ -n "$reqs" ] || continue
                mix=$(awk '$2 != "TOTAL"' "$mixfile" | head -4 |
                    awk -v r="$reqs" '{ printf "%s%s %.3f", (NR > 1 ? ", " : ""), $2, (r > 0 ? $1 / r : 0) }')
                echo "| $(shape_label "$shape") | $server | $mix |"
            done
        done
        write_uring_report
    } | tee "$OUT/report.md"
}

# Issue 43's table: each server against the epoll build (`netloop`), with the median p50
# and p99 and the ring's completions per request, then netloop-uring's acceptance checks.
# Printed when netloop ran beside netloop-uring or monoio.
write_uring_report() {
    [[ " $SERVERS " == *" netloop "* ]] || return 0
    [[ " $SERVERS " == *" netloop-uring "* || " $SERVERS " == *" monoio "* ]] || return 0
    echo
    echo "io_uring (issue 43): every server against the epoll build (netloop with NETLOOP_IO_DRIVER=epoll)." \
        "p50 and p99: the median over the windows of each window's percentile. Ring completions per request:" \
        "the growth of CqTail in the server's /proc/PID/fdinfo over all its runs of the shape (the windows and" \
        "the syscall run), over the requests answered in them: the I/O went through the ring. Syscalls per" \
        "request count io_uring_enter ($SYSCALL_TOOL)."
    echo
    echo "| shape | server | requests/s | server CPU µs/req | syscalls/req | p50 µs | p99 µs | CPU/req vs netloop | p99 vs netloop | ring completions/req |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    local awk_common='
        function conns(c) { return (match(c, /@c[0-9]+$/) ? substr(c, RSTART + 2) + 0 : defconns + 0) }
        function median(key,    i, j, m, t, a) {
            m = nv[key]
            if (m == 0) return -1
            for (i = 1; i <= m; i++) a[i] = val[key, i]
            for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return (m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2)
        }
        function push(key, v) { val[key, ++nv[key]] = v }
        function ratio(a, b) { return (b > 0 && a >= 0 ? sprintf("%.2f", a / b) : "—") }
        function us(v) { return (v >= 0 ? sprintf("%.0f", v) : "—") }
        FILENAME == drivers { if (FNR > 1) { drv[$1 SUBSEP $2] = $4; fds[$1 SUBSEP $2] = ($5 > 0 && $6 > 0); cq[$1 SUBSEP $2] = $7 }; next }
        FNR == 1 { next }
        $1 == 0 { k = $2 SUBSEP $3; if ($10 > 0) sys[k] = $9 / $10; all[k] += $10; next }
        {
            k = $2 SUBSEP $3
            req[k] += $4; sec[k] += $5; tic[k] += $6; all[k] += $4
            if ($12 > 0) push(k SUBSEP "p50", $12)
            if ($13 > 0) push(k SUBSEP "p99", $13)
        }
        function summarize(    k) {
            for (k in req) {
                R[k] = (sec[k] > 0 ? req[k] / sec[k] : 0)
                C[k] = (req[k] > 0 ? tic[k] / tck * 1e6 / req[k] : 0)
                P50[k] = median(k SUBSEP "p50"); P99[k] = median(k SUBSEP "p99")
            }
        }'
    # shellcheck disable=SC2016
    awk -F'\t' -v tck="$TCK" -v shapes="$CASES" -v servers="$SERVERS" -v drivers="$DRIVERS" -v defconns="${CONNS[0]}" \
        "$awk_common"'
        END {
            summarize()
            ns = split(shapes, sh, " "); nsv = split(servers, sv, " ")
            for (i = 1; i <= ns; i++) for (j = 1; j <= nsv; j++) {
                k = sh[i] SUBSEP sv[j]; e = sh[i] SUBSEP "netloop"
                if (!(k in req)) {
                    if ((k in drv) && drv[k] == "io_uring" && !fds[k])
                        printf "| %s | %s | not reported: no io_uring instance in the server | | | | | | | |\n", sh[i], sv[j]
                    continue
                }
                printf "| %s | %s | %.0f | %.2f | %s | %s | %s | %s | %s | %s |\n", sh[i], sv[j], R[k], C[k],
                    ((k in sys) ? sprintf("%.2f", sys[k]) : "—"), us(P50[k]), us(P99[k]),
                    ((e in C) ? ratio(C[k], C[e]) : "—"), ((e in P99) ? ratio(P99[k], P99[e]) : "—"),
                    ((k in cq) && cq[k] > 0 && all[k] > 0 ? sprintf("%.2f", cq[k] / all[k]) : "—")
            }
        }' "$DRIVERS" "$REPORTED" | label_rows
    [[ " $SERVERS " == *" netloop-uring "* ]] || return 0
    echo
    echo "netloop-uring against issue 43's acceptance (yes/NO, the ratio or value in brackets; CPU against epoll" \
        "is judged at 64 connections and more only):"
    echo
    echo "| shape | CPU/req ≤ 0.85x epoll's | CPU/req ≤ monoio's | syscalls/req ≤ 0.3 | p99 ≤ 1.1x epoll's |"
    echo "|---|---|---|---|---|"
    # shellcheck disable=SC2016
    awk -F'\t' -v tck="$TCK" -v shapes="$CASES" -v drivers="$DRIVERS" -v defconns="${CONNS[0]}" \
        "$awk_common"'
        function verdict(ok, what) { return (ok ? "yes" : "**NO**") " (" what ")" }
        END {
            summarize()
            ns = split(shapes, sh, " ")
            for (i = 1; i <= ns; i++) {
                u = sh[i] SUBSEP "netloop-uring"; e = sh[i] SUBSEP "netloop"; m = sh[i] SUBSEP "monoio"
                if (!(u in req)) {
                    printf "| %s | not measured: netloop-uring %s | | | |\n", sh[i],
                        (((u in drv) && !fds[u]) ? "had no io_uring instance" : "did not run")
                    continue
                }
                c1 = ((e in C) && C[e] > 0 ? (conns(sh[i]) >= 64 ? verdict(C[u] / C[e] <= 0.85, sprintf("%.2fx", C[u] / C[e])) \
                    : sprintf("— (%.2fx)", C[u] / C[e])) : "— (no epoll row)")
                c2 = ((m in C) && C[m] > 0 ? verdict(C[u] <= C[m], sprintf("%.2fx", C[u] / C[m])) : "— (no monoio row)")
                c3 = ((u in sys) ? verdict(sys[u] <= 0.3, sprintf("%.2f", sys[u])) : "— (not counted)")
                c4 = ((e in P99) && P99[e] > 0 && P99[u] >= 0 ? verdict(P99[u] / P99[e] <= 1.1, sprintf("%.2fx", P99[u] / P99[e])) : "— (no p99)")
                printf "| %s | %s | %s | %s | %s |\n", sh[i], c1, c2, c3, c4
            }
        }' "$DRIVERS" "$REPORTED" | label_rows
}

# The chart of the same results (docs/benchmarks.svg by default, linked from the README).
CHART=${CHART:-$ROOT/docs/benchmarks.svg}
write_chart() {
    python3 "$ROOT/benches/net/chart.py" "$REPORTED" "$CHART" && echo "chart: $CHART" >&2
}

if [ $REPORT_ONLY = 1 ]; then
    write_report
    write_chart
    exit 0
fi

# load_cmd CASE ADDR SECONDS: the load generator's command line.
load_cmd() {
    local shape addr=$2 secs=$3 conns client
    shape=$(case_shape "$1")
    conns=$(case_conns "$1")
    client="$BIN/net_client --addr $addr --connections $conns --seconds $secs"
    case $shape in
        echo-64) echo "$client --mode echo --size 64" ;;
        echo-1k) echo "$client --mode echo --size 1024" ;;
        echo-64-rate) echo "$client --mode echo --size 64 --rate $RATE" ;;
        echo-1k-rate) echo "$client --mode echo --size 1024 --rate $RATE" ;;
        http-wrk) echo "wrk -t1 -c$conns -d${secs}s --latency http://$addr/" ;;
        http-rate) echo "$client --mode http --rate $RATE" ;;
        http) echo "$client --mode http" ;;
        *) echo "unknown shape $shape" >&2; exit 1 ;;
    esac
}

# run_load CASE ADDR SECONDS LOGFILE -> "REQUESTS SECONDS P50_US P99_US": requests answered in
# all, the load's duration and its latency percentiles (net_client's `total`, `seconds`,
# `p50_us` and `p99_us`; wrk's "N requests in Xs" and its --latency distribution).
run_load() {
    local shape log=$4 n s p50 p99 cmd
    shape=$(case_shape "$1")
    cmd=$(load_cmd "$1" "$2" "$3")
    # shellcheck disable=SC2086
    timeout $(($3 + 20)) taskset -c "$CLIENT_CORE" $cmd >"$log" 2>&1 || true
    if [ "$shape" = http-wrk ]; then
        read -r n s p50 p99 < <(awk '
            function usec(v) {
                if (v ~ /us$/) return v + 0
                if (v ~ /ms$/) return (v + 0) * 1000
                if (v ~ /m$/) return (v + 0) * 60e6
                if (v ~ /s$/) return (v + 0) * 1e6
                return v + 0
            }
            /requests in/ { n = $1; s = $4; sub(/s,?$/, "", s) }
            $1 == "50%" { p50 = usec($2) }
            $1 == "99%" { p99 = usec($2) }
            END { print n + 0, s + 0, p50 + 0, p99 + 0 }' "$log")
    else
        read -r n s p50 p99 < <(awk '/^requests=/ {
            for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print v["total"], v["seconds"], v["p50_us"], v["p99_us"] }' "$log")
    fi
    echo "${n:-0} ${s:-0} ${p50:-0} ${p99:-0}"
}

# start_server SERVER MODE LOG -> sets PIDS[SERVER] and ADDRS[SERVER]. netloop-uring is
# net_server's netloop with NETLOOP_IO_DRIVER=io_uring, netloop with =epoll.
start_server() {
    local pid addr= runtime=$1 driver=
    case $1 in
        netloop) driver=epoll ;;
        netloop-uring) runtime=netloop driver=io_uring ;;
    esac
    : >"$3"
    # env execs taskset, which execs the server: $! is the server's PID.
    env ${driver:+NETLOOP_IO_DRIVER=$driver} taskset -c "$SERVER_CORE" "$BIN/net_server" --runtime "$runtime" \
        --mode "$2" --addr 127.0.0.1:0 --threads 1 --max-seconds "$SERVER_MAX_SECONDS" >"$3" 2>&1 &
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

# ring_fds PID: the fds of the process's io_uring instances, one per line.
ring_fds() {
    { ls -l "/proc/$1/fd" 2>/dev/null || true; } |
        awk '$NF == "anon_inode:[io_uring]" { for (i = 1; i < NF; i++) if ($(i + 1) == "->") print $i }'
}
# ring_state PID -> "RINGS COMPLETIONS IO_THREADS": how many io_uring instances the process
# holds, the sum of their CqTail (completions so far) and its io_uring kernel threads
# (iou-wrk-*, iou-sqp-*: their CPU is in the process's /proc/PID/stat).
ring_state() {
    local fd n=0 cq=0 t threads
    for fd in $(ring_fds "$1"); do
        n=$((n + 1))
        t=$(awk '$1 == "CqTail:" { print $2 }' "/proc/$1/fdinfo/$fd" 2>/dev/null || true)
        cq=$((cq + ${t:-0}))
    done
    threads=$({ cat /proc/"$1"/task/*/comm 2>/dev/null || true; } | grep -c '^iou-' || true)
    echo "$n $cq ${threads:-0}"
}
# check_drivers_start CASE: each server's rings once it listens (an io_uring server gets up
# to 2 s to set its ring up).
declare -A RING0=() CQ0=()
check_drivers_start() {
    local server n cq
    for server in "${servers[@]}"; do
        for _ in $(seq 40); do
            read -r n cq _ <<<"$(ring_state "${PIDS[$server]}")"
            [ "$n" -gt 0 ] || [ "$(server_driver "$server")" = epoll ] && break
            sleep 0.05
        done
        RING0[$server]=$n
        CQ0[$server]=$cq
    done
}
# check_drivers_end CASE: each server's rings after its last load, into $DRIVERS.
check_drivers_end() {
    local server n cq threads
    for server in "${servers[@]}"; do
        read -r n cq threads <<<"$(ring_state "${PIDS[$server]}")"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$server" "${PIDS[$server]}" "$(server_driver "$server")" \
            "${RING0[$server]}" "$n" $((cq - CQ0[$server])) "$threads" >>"$DRIVERS"
    done
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
n_shapes=$(wc -w <<<"$CASES")
# Per shape: the windows (each adds about 0.3 s to its load), the syscall runs (1 s to
# attach), a quiet check and the servers' start.
estimate=$((n_shapes * (n_servers * (ROUNDS * (RUN_SECONDS * 10 + 3) / 10 + SYSCALL_SECONDS + 1) + 2)))
SERVER_MAX_SECONDS=$((n_servers * (ROUNDS * (RUN_SECONDS + 1) + SYSCALL_SECONDS + 2) + EXTRA_BUDGET + 60))
echo "servers: $SERVERS" >&2
echo "shapes: $CASES; $ROUNDS interleaved windows of $RUN_SECONDS s per server and shape;" \
    "syscalls counted in one more run ($SYSCALL_TOOL, $SYSCALL_SECONDS s)" >&2
echo "estimated time: about $((estimate / 60 + 1)) min (at most $(((estimate + EXTRA_BUDGET) / 60 + 1)) min on a busy machine)" >&2
EXTRA_DEADLINE=$((SECONDS + estimate + EXTRA_BUDGET))
printf 'round\tshape\tserver\trequests\tseconds\tcpu_ticks\tother_ticks\ttries\tsyscalls\tsys_requests\tuser_ticks\tp50_us\tp99_us\n' >"$RESULTS"
printf 'shape\tserver\tpid\tdriver\trings_at_start\trings_at_end\tcompletions\tio_threads\n' >"$DRIVERS"
for shape in $CASES; do
    case $(case_shape "$shape") in http*) mode=http ;; *) mode=echo ;; esac
    for server in "${servers[@]}"; do
        start_server "$server" "$mode" "$OUT/$shape.$server.server.log"
    done
    check_drivers_start "$shape"
    for server in "${servers[@]}"; do
        if [ "$(server_driver "$server")" = io_uring ] && [ "${RING0[$server]}" = 0 ]; then
            echo "  $shape $server: no io_uring instance in PID ${PIDS[$server]}: it runs on epoll; measured, not reported" >&2
        fi
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
                read -r requests secs p50 p99 <<<"$(run_load "$shape" "${ADDRS[$server]}" "$RUN_SECONDS" "$OUT/$shape.$server.$round.load.log")"
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
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\t0\t%s\t%s\t%s\n' "$round" "$shape" "$server" "${requests:-0}" "${secs:-0}" \
                $((u1 + s1 - u0 - s0)) "$other" "$tries" $((u1 - u0)) "${p50:-0}" "${p99:-0}" >>"$RESULTS"
        done
    done
    for server in "${servers[@]}"; do
        read -r syscalls sys_requests <<<"$(count_syscalls "$shape" "$server" "$OUT/$shape.$server.syscalls")"
        printf '0\t%s\t%s\t0\t0\t0\t0\t0\t%s\t%s\t0\t0\t0\n' "$shape" "$server" "${syscalls:-0}" "${sys_requests:-0}" >>"$RESULTS"
    done
    check_drivers_end "$shape"
    stop_servers
    refused=$(refused_lines | awk -v s="$shape" '$1 == s')
    [ -z "$refused" ] || echo "$refused" | sed 's/^/  /' >&2
    reported_results
    awk -F'\t' -v tck="$TCK" -v shape="$shape" '
        $2 == shape && $1 > 0 { r[$3] += $4; s[$3] += $5; c[$3] += $6; if (!($3 in seen)) { seen[$3] = 1; o[++n] = $3 }
                                if ($13 > p99[$3]) p99[$3] = $13 }
        $2 == shape && $1 == 0 && $10 > 0 { y[$3] = $9 / $10 }
        END { for (i = 1; i <= n; i++) { k = o[i]
            printf "%-13s %-19s %8.0f req/s %6.2f us CPU/req %5.2f syscalls/req %6d us p99 (worst window)\n", shape, k,
                (s[k] > 0 ? r[k] / s[k] : 0), (r[k] > 0 ? c[k] / tck * 1e6 / r[k] : 0), y[k], p99[k] } }' "$REPORTED" >&2
done

# --- report -------------------------------------------------------------------------------
write_report
write_chart
