#!/usr/bin/env bash
# Creates .venv (if needed) and installs openvaala with its test tools into it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,local-model]"
