#!/usr/bin/env bash
# The test suites of crates built on tokio, unchanged, in patch mode: see run.py.
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" "$@"
