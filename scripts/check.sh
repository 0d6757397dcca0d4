#!/usr/bin/env bash
# The quick check before a commit (well under a minute): lint, format, types, schema drift, and the
# fast tests (everything but tests/e2e, in two processes). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check openvaala_lsp tests bench
.venv/bin/ruff format --check openvaala_lsp tests bench
.venv/bin/mypy
.venv/bin/python -m openvaala_lsp.protocol.schema --check
.venv/bin/pytest -q -p no:cacheprovider -m "not e2e" -n 2 "$@"
