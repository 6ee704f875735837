#!/usr/bin/env bash
# The drop-in proof: builds and runs every program of tests/dropin under netloop and
# under tokio, from the same source.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "-- netloop-dropin on netloop"
cargo test -p netloop-dropin

echo "-- netloop-dropin on tokio"
cargo test -p netloop-dropin --no-default-features --features rt-tokio
