#!/usr/bin/env bash
# Sets up and runs every check: lint, types, schema drift, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check openvaala_lsp tests bench
.venv/bin/ruff format --check openvaala_lsp tests bench
.venv/bin/mypy
.venv/bin/python -m openvaala_lsp.protocol.schema --check
OPENVAALA_REQUIRE_LOCAL_MODEL=1 .venv/bin/pytest -q -p no:cacheprovider "$@"
