#!/usr/bin/env bash
# Everything CI needs for the VS Code extension, from a clean clone: install, type check, lint, the
# schema-types drift check, build, the tests (unit, integration against the real openvaala-lsp,
# webview in headless Chromium), and the .vsix.
#
# Needs: the repository's .venv with openvaala-lsp (bash scripts/setup.sh at the root) and
# /usr/bin/chromium (apt-get install -y chromium). Nothing is downloaded but npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(cd ../.. && pwd)"

fail() {
  echo "error: $*" >&2
  exit 1
}
[ -x "$root/.venv/bin/openvaala-lsp" ] || fail "$root/.venv/bin/openvaala-lsp is missing: run 'bash scripts/setup.sh' at the repository root"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || fail "${CHROMIUM:-/usr/bin/chromium} is missing: apt-get install -y chromium"
command -v node >/dev/null || fail "node is missing (Node 20 or later)"

started=$SECONDS
step() { printf '\n== %s (%ss)\n' "$*" "$((SECONDS - started))"; }

step "npm ci"
npm ci --no-audit --no-fund

step "type check (tsc --strict)"
npm run -s typecheck

step "lint"
npm run -s lint

step "protocol types match schemas/"
npm run -s check:protocol

step "build"
npm run -s build:production

step "tests"
rm -rf test-artifacts
# integration test files start their own runtimes (each test its own OPENVAALA_HOME): two files at once
node --import tsx --test --test-concurrency=2 --test-reporter=spec \
  test/unit/*.test.ts test/integration/*.test.ts test/webview/*.test.ts

step "package"
rm -f ./*.vsix
node scripts/package-readme.mjs
npx vsce package --no-dependencies --readme-path dist/README.package.md --no-rewrite-relative-links \
  --out "openvaala-$(node -p 'require("./package.json").version').vsix"
ls -l ./*.vsix

step "done"
