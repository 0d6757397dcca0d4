#!/usr/bin/env bash
# A longer search than the 2000 examples per mode CI runs: bash scripts/fuzz.sh [EXAMPLES] (default 50000).
# Same derandomized examples for the same count; pass more to search further.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/pytest ] || bash scripts/setup.sh
OPENVAALA_FUZZ_EXAMPLES="${1:-50000}" exec .venv/bin/pytest -q -p no:cacheprovider tests/test_fuzz_wire.py
