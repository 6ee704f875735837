#!/usr/bin/env bash
# tokio's integration tests against netloop: see run.py (same arguments).
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run.py" "$@"
