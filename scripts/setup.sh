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
# llama.cpp (the local-model extra) is built for this CPU, but without AMX: its AMX kernels crash on
# virtual machines that report AMX (seen on ours); AVX-512 and the rest stay
if [ "$(uname -m)" = x86_64 ]; then
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  export CMAKE_ARGS="${CMAKE_ARGS:-} '-DCMAKE_C_FLAGS=$no_amx' '-DCMAKE_CXX_FLAGS=$no_amx'"
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,local-model]"
echo "$want" > "$stamp"
