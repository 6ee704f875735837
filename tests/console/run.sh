#!/usr/bin/env bash
# tokio-console and tokio-metrics on netloop, in patch mode (docs/observability.md):
# builds console-subscriber 0.5 and tokio-metrics 0.5 with `--cfg tokio_unstable`
# against crates/tokio through this directory's [patch.crates-io] line, checks that the
# graph holds one tokio, netloop's, then runs src/main.rs, which connects to the
# console's gRPC server as tokio-console does and fails unless it lists the named tasks
# with their loop field and tokio-metrics' figures are non-zero.
#
#   tests/console/run.sh
#
# Its target directory is the main one's target/console (the flag changes every
# crate's build, so it is a directory of its own).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-../../target/console}
export RUSTFLAGS="--cfg tokio_unstable"
tokios=$(cargo tree --locked -e normal,build --prefix none --format '{p}' | grep -E '^tokio v' | sed 's/ [(][*][)]$//' | sort -u)
echo "tokio in the graph: $tokios"
if [ "$tokios" != "tokio v1.999.0 ($(cd ../../crates/tokio && pwd))" ]; then
    echo "expected netloop's tokio only (crates/tokio, 1.999.0)" >&2
    exit 1
fi
# The lock file names no registry tokio either.
if grep -A2 '^name = "tokio"$' Cargo.lock | grep -q '^source'; then
    echo "Cargo.lock holds a tokio from a registry" >&2
    exit 1
fi
cargo build --locked
timeout 120 "$CARGO_TARGET_DIR/debug/netloop-console-check"
