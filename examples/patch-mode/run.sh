#!/usr/bin/env bash
# The patch-mode application: checks that its dependency graph holds one tokio, netloop's
# (crates/tokio, 1.999.0), and none from the registry; then lints it (warnings denied) and
# runs its tests.
#
#   examples/patch-mode/run.sh
#
# Its target directory is the main one's target/patch-app.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-../../target/patch-app}
# Every package named tokio in the graph, normal, build and dev dependencies alike.
tokios=$(cargo tree --locked -e normal,build,dev --prefix none --format '{p}' | grep -E '^tokio v' | sed 's/ [(][*][)]$//' | sort -u)
echo "tokio in the graph: $tokios"
if [ "$tokios" != "tokio v1.999.0 ($(cd ../../crates/tokio && pwd))" ]; then
    echo "expected netloop's tokio only (crates/tokio, 1.999.0)" >&2
    exit 1
fi
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked
