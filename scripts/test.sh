#!/usr/bin/env bash
# Sets up and runs every check and test (what CI runs): the quick check, then the end-to-end tests
# that drive real processes (the server, the runtime host, the CLI, Neovim, the embedded model).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check.sh
OPENVAALA_REQUIRE_LOCAL_MODEL=1 .venv/bin/pytest -q -p no:cacheprovider -m e2e "$@"
