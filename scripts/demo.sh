#!/usr/bin/env bash
# Sets up and runs the main job: an editor session against openvaala-lsp, with its history in DuckDB.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/openvaala demo "$@"
