#!/usr/bin/env bash
# One run, one table: netloop against tokio on the scheduler, timer, memory and network
# shapes (see guard.py).
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/guard.py" "$@"
