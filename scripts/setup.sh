#!/usr/bin/env bash
# Creates .venv (if needed) and installs openvaala with its test tools into it. The install is
# editable, so code changes need nothing; it runs again only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.installed-from
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,local-model]"
echo "$want" > "$stamp"
