// The chat webview in real headless Chromium (playwright-core driving /usr/bin/chromium; nothing is
// downloaded). The page is served from a made-up origin through request interception, with the
// same Content-Security-Policy as in VS Code, a stand-in for `acquireVsCodeApi` that records what
// the view posts, and VS Code's dark theme variables.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import type { HostMessage, ViewMessage } from "../../src/shared/messages";
import { ARTIFACTS, CHROMIUM, EXTENSION_ROOT } from "./paths";

const ORIGIN = "https://webview.test";
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const FILES: Record<string, { path: string; type: string }> = {
  "/chat.js": { path: join(EXTENSION_ROOT, "dist", "webview", "chat.js"), type: "text/javascript" },
  "/usage.js": { path: join(EXTENSION_ROOT, "dist", "webview", "usage.js"), type: "text/javascript" },
  "/chat.css": { path: join(EXTENSION_ROOT, "media", "chat.css"), type: "text/css" },
  "/usage.css": { path: join(EXTENSION_ROOT, "media", "usage.css"), type: "text/css" },
  "/codicon.css": { path: join(EXTENSION_ROOT, "dist", "webview", "codicon.css"), type: "text/css" },
  "/codicon.ttf": { path: join(EXTENSION_ROOT, "dist", "webview", "codicon.ttf"), type: "font/ttf" },
  "/theme.css": { path: join(EXTENSION_ROOT, "test", "support", "vscode-dark.css"), type: "text/css" },
};

function html(script: string, style: string): string {
  const csp = `default-src 'none'; style-src ${ORIGIN}; img-src ${ORIGIN} data:; font-src ${ORIGIN}; script-src 'nonce-test'`;
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<link rel="stylesheet" href="${ORIGIN}/theme.css"><link rel="stylesheet" href="${ORIGIN}/codicon.css"><link rel="stylesheet" href="${ORIGIN}/${style}">
</head><body><div id="app"></div><script nonce="test" src="${ORIGIN}/${script}"></script></body></html>`;
}

/** What the test page adds to the webview's window (this file is type-checked without the DOM lib). */
interface PageGlobals {
  __posted: unknown[];
  __received: number;
  postMessage(message: unknown, targetOrigin: string): void;
  openvaalaFlush?: () => void;
}

/** What the webview tests lack here, or undefined when they can run. */
export function missingBrowser(): string | undefined {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing: apt-get install -y chromium`;
  for (const file of Object.values(FILES)) {
    if (!existsSync(file.path)) return `${file.path} is missing: run \`npm run build\` first`;
  }
  return undefined;
}

export class WebviewPage {
  readonly violations: string[] = [];
  readonly errors: string[] = [];

  private constructor(
    private readonly context: BrowserContext,
    readonly page: Page,
    private readonly profile: string,
  ) {}

  static async open(view: "chat" | "usage", size = { width: 460, height: 900 }): Promise<WebviewPage> {
    // never skipped: without Chromium or the build the webview tests fail and say what is missing
    const missing = missingBrowser();
    if (missing) throw new Error(missing);
    const profile = mkdtempSync(join(tmpdir(), "ov-chromium-"));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: size,
      deviceScaleFactor: 1,
    });
    await context.route("**/*", async (route) => {
      const url = new URL(route.request().url());
      if (url.origin !== ORIGIN) return route.abort(); // nothing leaves the machine
      if (url.pathname === "/") return route.fulfill({ contentType: "text/html", body: html(`${view}.js`, `${view}.css`) });
      const file = FILES[url.pathname];
      if (!file) return route.fulfill({ status: 404, body: "" });
      return route.fulfill({ contentType: file.type, body: readFileSync(file.path) });
    });
    // a string, not a function: the test runner's transpiler would add helpers the page lacks
    await context.addInitScript({
      content: `
        window.__posted = [];
        window.__received = 0;
        // registered before the view's own listener: when it has counted a message, the view has it too
        window.addEventListener("message", () => { window.__received++; });
        window.acquireVsCodeApi = () => ({
          postMessage: (message) => window.__posted.push(message),
          getState: () => undefined,
          setState: () => undefined,
        });`,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const webview = new WebviewPage(context, page, profile);
    page.on("console", (message) => {
      if (message.type() === "error") webview.errors.push(message.text());
      if (message.text().includes("Content Security Policy")) webview.violations.push(message.text());
    });
    page.on("pageerror", (error) => webview.errors.push(String(error)));
    await page.goto(`${ORIGIN}/`);
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).__posted.length > 0);
    return webview;
  }

  /** Delivers messages as the extension host would (`webview.postMessage`). */
  async send(...messages: HostMessage[]): Promise<void> {
    const target = await this.page.evaluate((batch) => {
      const page = globalThis as unknown as PageGlobals;
      for (const message of batch) page.postMessage(message, "*");
      return page.__received + batch.length;
    }, messages);
    // message events are separate tasks: wait until the view has handled them all, then render pending deltas
    await this.page.waitForFunction((count) => (globalThis as unknown as PageGlobals).__received >= count, target);
    await this.page.evaluate(() => (globalThis as unknown as PageGlobals).openvaalaFlush?.());
  }

  async posted(): Promise<ViewMessage[]> {
    return this.page.evaluate(() => (globalThis as unknown as PageGlobals).__posted.slice() as ViewMessage[]);
  }

  async clearPosted(): Promise<void> {
    await this.page.evaluate(() => {
      (globalThis as unknown as PageGlobals).__posted.length = 0;
    });
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, `${name}.png`);
    // the view scrolls to the bottom in an animation frame: let it happen first
    await this.page.evaluate(
      () =>
        new Promise((resolve) => {
          const page = globalThis as unknown as { requestAnimationFrame(callback: () => void): void };
          page.requestAnimationFrame(() => page.requestAnimationFrame(() => resolve(undefined)));
        }),
    );
    await this.page.screenshot({ path });
    return path;
  }

  async close(): Promise<void> {
    await this.context.close();
    rmSync(this.profile, { recursive: true, force: true });
  }
}
