#!/usr/bin/env bash
# User-space instructions per request of each server's serving thread, under callgrind.
#
#   benches/net/instructions.sh                    # every server, echo and http
#   SERVERS="mio netloop" MODES=echo benches/net/instructions.sh
#
# Why: on this shared VM the CPU time per request drifts by 10-15% between windows (the
# kernel's part moves with the host), so a change of a few percent in a runtime's own
# code cannot be seen in benches/net/run.sh. Instruction counts are far steadier: mio's does
# not move, and a runtime's moves by a few percent between runs, as the share of requests
# that get a wake-up of their own varies (netloop's echo: 1,135-1,253 over four runs of
# one build). On this machine a server's user-space perf samples per request track them.
#
# How: each server runs under `valgrind --tool=callgrind` with collection switched on only
# inside its serving thread's main function (so start-up, the acceptor's own accepts and
# the client are not counted), on one thread/loop/worker, and net_client sends $REQUESTS
# echo (64 B) or HTTP requests over 64 connections at $RATE per second: at that rate every
# request is a wake-up of its own, the case where per-wake-up costs matter most. Callgrind
# slows the server about 50 times, which the low rate leaves room for. The count includes
# libc (the syscall wrappers), not the kernel.
set -euo pipefail

SERVERS=${SERVERS:-"mio futures-floor netloop tokio-mt"}
MODES=${MODES:-"echo http"}
RATE=${RATE:-4000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
REQUESTS=$((RATE * SECONDS_PER_RUN))
OUT=${OUT:-target/net-bench/instructions}

cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || {
    echo "valgrind is needed (Debian package valgrind)" >&2
    exit 1
}
cargo build --release -q -p netloop-benches --example net_server --example net_client
BIN=target/release/examples
mkdir -p "$OUT"

# The function each server's serving thread runs; collection is on inside it only.
entry() {
    case $1 in
        mio) echo 'netloop_benches::net::mio_server::run*' ;;
        futures-floor) echo 'netloop_benches::net::futures_floor::run*' ;;
        netloop) echo 'netloop_reactor::event_loop::EventLoop::run*' ;;
        tokio-mt) echo 'tokio::runtime::scheduler::multi_thread::worker::run*' ;;
        tokio-ct-reuseport) echo 'net_server::tokio_net::current_thread' ;;
        smol) echo 'net_server::smol_net::server*' ;;
        *) echo "unknown server $1" >&2; exit 1 ;;
    esac
}

printf '| server | mode | instructions per request |\n|---|---|---|\n'
for mode in $MODES; do
    for server in $SERVERS; do
        log=$OUT/$server-$mode.log
        data=$OUT/$server-$mode.callgrind
        # Created before the server starts, so that the wait below can read it at once.
        : >"$log"
        valgrind --tool=callgrind --callgrind-out-file="$data" --collect-atstart=no \
            "--toggle-collect=$(entry "$server")" \
            "$BIN/net_server" --runtime "$server" --mode "$mode" --addr 127.0.0.1:0 \
            --threads 1 --max-seconds $((SECONDS_PER_RUN + 25)) >"$log" 2>&1 &
        pid=$!
        addr=
        for _ in $(seq 100); do
            addr=$(awk '/^listening / {print $2}' "$log")
            [ -n "$addr" ] && break
            sleep 0.2
        done
        [ -n "$addr" ] || { echo "$server did not start; see $log" >&2; kill $pid; exit 1; }
        "$BIN/net_client" --addr "$addr" --mode "$mode" --size 64 --connections 64 \
            --seconds "$SECONDS_PER_RUN" --rate "$RATE" >"$OUT/$server-$mode.client"
        # The server exits by itself at --max-seconds (callgrind then writes its data).
        wait $pid || true
        total=$(callgrind_annotate "$data" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
        [ -n "$total" ] || { echo "no instructions collected for $server; see $data" >&2; exit 1; }
        printf '| %s | %s | %d |\n' "$server" "$mode" $((total / REQUESTS))
    done
done
