// Where the tests find the real server and the scripted fake model.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

export const EXTENSION_ROOT = resolve(__dirname, "..", "..");
export const REPO_ROOT = resolve(EXTENSION_ROOT, "..", "..");
export const SERVER = process.env.OPENVAALA_LSP ?? join(REPO_ROOT, ".venv", "bin", "openvaala-lsp");
export const PYTHON = process.env.OPENVAALA_PYTHON ?? join(REPO_ROOT, ".venv", "bin", "python");
export const FAKE_MODEL_CLI = join(REPO_ROOT, "tests", "fake_model_cli.py");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const ARTIFACTS = join(EXTENSION_ROOT, "test-artifacts");
export const FIXTURES = join(EXTENSION_ROOT, "test", "fixtures");

/** Why the integration tests cannot run here, or undefined when they can. */
export function missingServer(): string | undefined {
  if (!existsSync(SERVER)) return `${SERVER} is missing: run \`bash scripts/setup.sh\` at the repository root`;
  if (!existsSync(PYTHON)) return `${PYTHON} is missing: run \`bash scripts/setup.sh\` at the repository root`;
  return undefined;
}
