#!/usr/bin/env bash
# Sets up and runs every check and test (what CI runs): the quick check, the end-to-end tests that
# drive real processes (the server, the runtime host, the CLI, Neovim, the embedded model), then the
# VS Code extension's (type check, lint, schema drift, its tests against the real server and in
# headless Chromium, the .vsix). Installs what it needs: Python packages into .venv, npm packages,
# Debian's emacs-nox and elpa-eglot (for the eglot tests), openssh-server (the ssh executor's tests start
# its sshd on a loopback port), Java 17 (for PySpark) and chromium when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/sbin/sshd ]; then
  echo "installing Debian's openssh-server for the ssh executor tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null) ||
    { echo "error: could not install openssh-server (apt-get install -y openssh-server)" >&2; exit 1; }
fi
export OPENVAALA_REQUIRE_SSHD=1  # the ssh executor's tests fail, not skip, without sshd
bash scripts/check.sh
if ! emacs --batch -q --eval "(require 'eglot)" >/dev/null 2>&1; then
  echo "installing Debian's emacs-nox and elpa-eglot for the eglot tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot >/dev/null) ||
    { echo "error: could not install emacs-nox and elpa-eglot (apt-get install -y emacs-nox elpa-eglot)" >&2; exit 1; }
fi
# PySpark (tests/e2e/test_usage_spark.py) runs on a JVM: Java 17 or later
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  echo "installing Debian's openjdk-17-jre-headless for the Spark test"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null) ||
    { echo "error: could not install openjdk-17-jre-headless (apt-get install -y openjdk-17-jre-headless)" >&2; exit 1; }
fi
.venv/bin/python -c 'from openvaala_lsp.tools import sandbox; print("sandbox:", sandbox.state().reason)'
OPENVAALA_REQUIRE_LOCAL_MODEL=1 .venv/bin/pytest -q -p no:cacheprovider -m e2e "$@"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "installing Debian's chromium for the webview tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
    { echo "error: could not install chromium (apt-get install -y chromium)" >&2; exit 1; }
fi
bash editor-extensions/vscode/scripts/ci.sh
