#!/usr/bin/env bash
# The churn soak (tests/soak.rs): opens and closes SOAK_CONNECTIONS
# connections (default 100000, the CI form) against a netloop server on 127.0.0.1,
# mixing clean closes, resets, half-closes, clients that vanish mid-request and
# accept bursts at the descriptor limit, then checks that descriptors, live tasks,
# registrations and RSS are back where they were. Prints its figures.
#
#   .ci/soak.sh                              # CI: 100,000 connections, well under 1 min
#   SOAK_CONNECTIONS=5000000 .ci/soak.sh     # by hand (add --release to go faster)
#   SOAK_CONNECTIONS=5000000 .ci/soak.sh --release
#
# The debug build is the one `cargo test --workspace` already made, so in CI this
# costs no compilation; it also keeps netloop's debug assertions on.
set -euo pipefail
cd "$(dirname "$0")/.."
export SOAK_CONNECTIONS="${SOAK_CONNECTIONS:-100000}"
exec cargo test "$@" -p netloop-tests --test soak
