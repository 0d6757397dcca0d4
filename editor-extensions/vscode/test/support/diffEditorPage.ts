// The diff the extension opens (`vscode.diff` on the before and after virtual documents), shown in
// headless Chromium by Monaco's diff editor (the editor component VS Code is built on), since the
// webview tests cannot start VS Code itself. It is given exactly the DiffView the chat controller
// gave the extension; screenshots go to test-artifacts/.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { chromium } from "playwright-core";
import type { DiffView } from "../../src/chat/controller";
import { ARTIFACTS, CHROMIUM, EXTENSION_ROOT } from "./paths";
import { CHROMIUM_FLAGS } from "./webviewPage";

const ORIGIN = "https://diff.test";
const MONACO = join(EXTENSION_ROOT, "node_modules", "monaco-editor", "min");
const TYPES: Record<string, string> = { ".js": "text/javascript", ".css": "text/css", ".ttf": "font/ttf" };
const LANGUAGES: Record<string, string> = { ".py": "python", ".ts": "typescript", ".js": "javascript", ".md": "markdown", ".json": "json" };

function page(diff: DiffView): string {
  const language = LANGUAGES[extname(diff.path)] ?? "plaintext";
  const data = JSON.stringify({ ...diff, language }).replace(/</g, "\\u003c");
  return `<!DOCTYPE html><html><head><meta charset="utf-8">
<style>
  html, body { margin: 0; height: 100%; background: #1e1e1e; color: #ccc; font: 13px system-ui, sans-serif; }
  .tabs { height: 35px; display: flex; align-items: stretch; background: #252526; }
  .tab { display: flex; align-items: center; gap: 6px; padding: 0 12px; background: #1e1e1e; color: #fff; border-top: 1px solid #0078d4; font-style: italic; }
  .note { padding: 4px 12px; background: #252526; color: #cca700; }
  #editor { position: absolute; top: 35px; bottom: 0; left: 0; right: 0; }
  body.noted #editor { top: 60px; }
</style>
<link rel="stylesheet" href="${ORIGIN}/vs/editor/editor.main.css">
</head><body>
<div class="tabs"><div class="tab" id="title"></div></div>
<div class="note" id="note" hidden></div>
<div id="editor"></div>
<script>
  const diff = ${data};
  document.getElementById("title").textContent = diff.title;
  if (diff.note) { const note = document.getElementById("note"); note.hidden = false; note.textContent = diff.note; document.body.classList.add("noted"); }
  self.MonacoEnvironment = { getWorkerUrl: () => "${ORIGIN}/worker.js" };
</script>
<script src="${ORIGIN}/vs/loader.js"></script>
<script>
  require.config({ paths: { vs: "${ORIGIN}/vs" } });
  require(["vs/editor/editor.main"], () => {
    const editor = monaco.editor.createDiffEditor(document.getElementById("editor"), {
      theme: "vs-dark", readOnly: true, renderSideBySide: true, automaticLayout: true, minimap: { enabled: false },
      fontSize: 13, scrollBeyondLastLine: false, renderOverviewRuler: false,
    });
    const uri = (side) => monaco.Uri.from({ scheme: "openvaala-diff", path: diff.path, query: side });
    editor.setModel({
      original: monaco.editor.createModel(diff.before, diff.language, uri("before")),
      modified: monaco.editor.createModel(diff.after, diff.language, uri("after")),
    });
    const done = () => { window.__diffReady = editor.getLineChanges() !== null; };
    editor.onDidUpdateDiff(done);
    done();
  });
</script></body></html>`;
}

/** Shows `diff` as the diff editor would and saves a screenshot; returns its path and the line
 * changes Monaco found (each `[originalStart, originalEnd, modifiedStart, modifiedEnd]`). */
export async function screenshotDiff(diff: DiffView, name: string, size = { width: 1000, height: 420 }): Promise<{ path: string; changes: number[][] }> {
  if (!existsSync(join(MONACO, "vs", "loader.js"))) throw new Error(`${MONACO} is missing: run \`npm ci\` first`);
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = mkdtempSync(join(tmpdir(), "ov-diff-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, viewport: size, deviceScaleFactor: 1 });
  try {
    await context.route("**/*", async (route) => {
      const url = new URL(route.request().url());
      if (url.origin !== ORIGIN) return route.abort();
      if (url.pathname === "/") return route.fulfill({ contentType: "text/html", body: page(diff) });
      if (url.pathname === "/worker.js") {
        return route.fulfill({ contentType: "text/javascript", body: `self.MonacoEnvironment = { baseUrl: "${ORIGIN}/" }; importScripts("${ORIGIN}/vs/base/worker/workerMain.js");` });
      }
      const file = normalize(join(MONACO, decodeURIComponent(url.pathname)));
      if (!file.startsWith(MONACO) || !existsSync(file)) return route.fulfill({ status: 404, body: "" });
      return route.fulfill({ contentType: TYPES[extname(file)] ?? "application/octet-stream", body: readFileSync(file) });
    });
    const tab = context.pages()[0] ?? (await context.newPage());
    await tab.goto(`${ORIGIN}/`);
    await tab.waitForFunction(() => (globalThis as unknown as { __diffReady?: boolean }).__diffReady === true, undefined, { timeout: 30_000 });
    await tab.waitForTimeout(300); // the decorations are drawn a frame after the diff
    const changes = await tab.evaluate(() => {
      const monaco = (globalThis as unknown as { monaco: { editor: { getDiffEditors(): { getLineChanges(): { originalStartLineNumber: number; originalEndLineNumber: number; modifiedStartLineNumber: number; modifiedEndLineNumber: number }[] | null }[] } } }).monaco;
      return (monaco.editor.getDiffEditors()[0]?.getLineChanges() ?? []).map((c) => [c.originalStartLineNumber, c.originalEndLineNumber, c.modifiedStartLineNumber, c.modifiedEndLineNumber]);
    });
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, `${name}.png`);
    await tab.screenshot({ path });
    return { path, changes };
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
