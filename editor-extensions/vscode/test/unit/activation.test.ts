// The bundled extension (dist/extension.js) loads and activates against a stand-in `vscode` module:
// it registers exactly the commands and the view that package.json contributes, and the chat
// view's HTML has a strict Content-Security-Policy. (Tests that need VS Code itself would have to
// download it; the logic behind the view is tested in Node and in Chromium.)
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import Module from "node:module";
import { join } from "node:path";
import { describe, it } from "node:test";
import { EXTENSION_ROOT } from "../support/paths";

const BUNDLE = join(EXTENSION_ROOT, "dist", "extension.js");

interface Recorded {
  commands: Map<string, (...args: unknown[]) => unknown>;
  views: Map<string, { resolveWebviewView(view: unknown): void }>;
  /** The schemes of the virtual documents it provides (the diff editor's before and after). */
  schemes: string[];
}

/** Any property is a callable, constructible stand-in, except those the test looks at. */
function standIn(name: string): unknown {
  const target = function () {
    return standIn(`${name}()`);
  };
  return new Proxy(target, {
    get: (_, property) => {
      if (property === "then") return undefined; // not a promise
      if (property === Symbol.toPrimitive) return () => name;
      return standIn(`${name}.${String(property)}`);
    },
    construct: () => standIn(`new ${name}`) as object,
  });
}

function fakeVscode(recorded: Recorded): unknown {
  const disposable = { dispose: () => undefined };
  const uri = (path: string) => ({ fsPath: path, scheme: "file", path, toString: () => `file://${path}` });
  const api = {
    window: {
      createOutputChannel: () => ({ info() {}, warn() {}, error() {}, show() {}, dispose() {}, appendLine() {} }),
      createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
      registerWebviewViewProvider: (id: string, provider: { resolveWebviewView(view: unknown): void }) => {
        recorded.views.set(id, provider);
        return disposable;
      },
    },
    commands: {
      registerCommand: (name: string, handler: (...args: unknown[]) => unknown) => {
        recorded.commands.set(name, handler);
        return disposable;
      },
      executeCommand: () => Promise.resolve(undefined),
    },
    workspace: {
      workspaceFolders: [{ uri: uri("/project"), name: "project", index: 0 }],
      onDidChangeWorkspaceFolders: () => disposable,
      getConfiguration: () => ({ get: <T>(_: string, fallback: T) => fallback }),
      registerTextDocumentContentProvider: (scheme: string) => {
        recorded.schemes.push(scheme);
        return disposable;
      },
    },
    Uri: { joinPath: (base: { path: string }, ...parts: string[]) => uri([base.path, ...parts].join("/")), parse: uri },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ViewColumn: { Active: -1 },
  };
  return new Proxy(api, {
    get: (target, property) => (property in target ? target[property as keyof typeof target] : standIn(`vscode.${String(property)}`)),
  });
}

describe("the bundled extension", () => {
  it("activates and registers what package.json contributes", () => {
    assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run \`npm run build\` first`);
    const recorded: Recorded = { commands: new Map(), views: new Map(), schemes: [] };
    const vscode = fakeVscode(recorded);
    const loader = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
    const original = loader._load;
    loader._load = (request, parent, isMain) => (request === "vscode" ? vscode : original(request, parent, isMain));
    try {
      delete require.cache[BUNDLE];
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the CommonJS bundle, loaded with the stand-in in place
      const extension = require(BUNDLE) as { activate(context: unknown): void };
      const context = { subscriptions: [] as unknown[], extensionUri: { path: EXTENSION_ROOT, fsPath: EXTENSION_ROOT, scheme: "file" } };
      extension.activate(context);
      assert.ok(context.subscriptions.length > 0);
    } finally {
      loader._load = original;
    }
    const manifest = JSON.parse(readFileSync(join(EXTENSION_ROOT, "package.json"), "utf8")) as {
      contributes: { commands: { command: string }[]; views: Record<string, { id: string }[]>; keybindings: { command: string }[]; menus: Record<string, { command: string }[]> };
    };
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual([...recorded.commands.keys()].sort(), contributed);
    for (const binding of manifest.contributes.keybindings) assert.ok(contributed.includes(binding.command), binding.command);
    for (const item of Object.values(manifest.contributes.menus).flat()) assert.ok(contributed.includes(item.command), item.command);
    assert.deepEqual([...recorded.views.keys()], Object.values(manifest.contributes.views).flat().map((v) => v.id));
    assert.deepEqual(recorded.schemes, ["openvaala-diff"], "the diff editor's virtual documents");

    // the chat view's page: scripts only from the bundle, with a nonce; no inline script or remote source
    const posted: unknown[] = [];
    const webview = {
      options: {},
      html: "",
      cspSource: "vscode-webview://test",
      asWebviewUri: (u: { path: string }) => ({ toString: () => `vscode-webview://test${u.path}` }),
      onDidReceiveMessage: () => ({ dispose() {} }),
      postMessage: (message: unknown) => posted.push(message),
    };
    recorded.views.get("openvaala.chat")!.resolveWebviewView({ webview, onDidDispose: () => ({ dispose() {} }) });
    const csp = /Content-Security-Policy" content="([^"]+)"/.exec(webview.html)?.[1] ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]+'(;|$)/);
    assert.ok(!/unsafe-inline|unsafe-eval|https?:/.test(csp), csp);
    const nonce = /nonce-([A-Za-z0-9+/=]+)/.exec(csp)?.[1];
    const scripts = [...webview.html.matchAll(/<script([^>]*)>/g)].map((m) => m[1] ?? "");
    assert.deepEqual(scripts, [` nonce="${nonce}" src="vscode-webview://test${EXTENSION_ROOT}/dist/webview/chat.js"`]);
  });
});
