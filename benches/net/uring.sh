#!/usr/bin/env bash
# Issue 43's io_uring benchmarks: run.sh with the issue's servers, shapes and connection
# counts (each can still be set), its own output directory, and its chart beside its
# results rather than over docs/benchmarks.svg.
#
#   benches/net/uring.sh                             # about 13 minutes
#   ROUNDS=1 RUN_SECONDS=1 SYSCALL_SECONDS=1 benches/net/uring.sh   # a smoke test, about 2
#   benches/net/uring.sh --report                    # the tables again
#
# Servers: mio (the floor), netloop (epoll, NETLOOP_IO_DRIVER=epoll), netloop-uring
# (NETLOOP_IO_DRIVER=io_uring), monoio (its IoUringDriver), tokio-mt. Shapes: echo 64 B,
# echo 1 KiB and HTTP (net_client's closed loop: percentiles at any connection count), at
# 1, 64 and 1,024 connections. A netloop-uring or monoio server without an io_uring
# instance is not reported (run.sh's header says how that is checked). The last table
# sets netloop-uring against the issue's acceptance. See docs/io-uring.md, "Benchmarks".
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CONNECTIONS=${CONNECTIONS:-"1 64 1024"}
export SHAPES=${SHAPES:-"echo-64 echo-1k http"}
export SERVERS=${SERVERS:-"mio netloop netloop-uring monoio tokio-mt"}
export OUT=${OUT:-$ROOT/target/net-bench-uring}
export CHART=${CHART:-$OUT/chart.svg}
exec "$ROOT/benches/net/run.sh" "$@"
