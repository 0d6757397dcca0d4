// The chat webview in headless Chromium, driven live by the chat controller against the real
// runtime and the scripted model: what the user sees of a turn's files (the list under the turn,
// the diff editor opened from it, an undo refused for a conflict and done anyway), the @-mention
// completion, and a partial answer after the runtime host was killed. Every view message goes to
// the controller as the extension host would pass it. Screenshots go to test-artifacts/;
// chat-hero.png is docs/chat.png, the README's picture (OPENVAALA_UPDATE_DOCS=1 copies it there).
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it, type TestContext } from "node:test";
import { ChatController, type DiffView } from "../../src/chat/controller";
import type { HostMessage, ViewMessage } from "../../src/shared/messages";
import { screenshotDiff } from "../support/diffEditorPage";
import { FakeUi, provider } from "../support/fakeUi";
import { harness, type Harness } from "../support/harness";
import { EXTENSION_ROOT } from "../support/paths";
import { WebviewPage } from "../support/webviewPage";

/** A ChatUi that shows everything in the Chromium page, in order. */
class PageUi extends FakeUi {
  private queue: Promise<void> = Promise.resolve();
  constructor(private readonly page: WebviewPage) {
    super();
  }
  override post(message: HostMessage): void {
    super.post(message);
    this.queue = this.queue.then(() => this.page.send(message)).catch(() => undefined);
  }
  /** Every message posted so far has reached the page. */
  async settled(): Promise<void> {
    let last: Promise<void> | undefined;
    while (last !== this.queue) {
      last = this.queue;
      await last;
    }
  }
}

interface Live {
  h: Harness;
  page: WebviewPage;
  ui: PageUi;
  controller: ChatController;
  /** Hands what the view posted to the controller (as the extension host does), then waits for the page. */
  pump(): Promise<ViewMessage[]>;
}

async function live(t: TestContext, files: Record<string, string>): Promise<Live> {
  const h = await harness(t);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(h.runtime.workspace, name, ".."), { recursive: true });
    writeFileSync(join(h.runtime.workspace, name), text);
  }
  // a model and an agent as a user would name them (no "fake" in the pictures), no title calls
  await h.runtime.client.rpc.request("openvaala/setDefinitions", {
    models: [{ ref: { provider: "example", name: "coding-model" }, api: "openai-chat", baseUrl: h.model.baseUrl, apiKeyEnv: "FAKE_API_KEY", contextWindow: 128_000 }],
    agents: [{ name: "default", defaultModel: { provider: "example", name: "coding-model" }, permissions: { default: "allow" }, titles: false }],
  });
  const page = await WebviewPage.open("chat", { width: 520, height: 860 });
  t.after(() => page.close());
  const ui = new PageUi(page);
  ui.root = h.runtime.workspace;
  const controller = new ChatController(ui, provider(h.runtime.client, pathToFileURL(h.runtime.workspace).toString()));
  t.after(() => controller.dispose());
  const pump = async () => {
    const posted = await page.posted();
    await page.clearPosted();
    for (const message of posted) await controller.handle(message);
    await ui.settled();
    return posted;
  };
  await pump(); // the view's "ready"
  return { h, page, ui, controller, pump };
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const GREET = 'def greet(name: str) -> str:\n    return f"hi {name}"\n\n\nif __name__ == "__main__":\n    print(greet("world"))\n';

describe("a turn's files, the diff editor, undo and context in the chat webview (live)", { timeout: 240_000 }, () => {
  it("lists the turn's files, opens a diff, refuses an undo for a conflict and reverts anyway", async (t) => {
    const { h, page, ui, pump } = await live(t, { "src/greet.py": GREET, "README.md": "# greeter\n" });
    const p = page.page;
    await h.model.enqueue(
      [["text", "I'll make the greeting friendlier and note the follow-up."], ["tool_call", "c1", "edit", [JSON.stringify({ path: "src/greet.py", old_string: 'return f"hi {name}"', new_string: 'return f"Hello, {name}!"' })]], ["finish"]],
      [["tool_call", "c2", "write_file", [JSON.stringify({ path: "notes/TODO.md", content: "# TODO\n\n- translate the greeting\n- add a test for greet()\n" })]], ["finish"]],
      [["text", "Done. `src/greet.py:2` now returns `Hello, {name}!`, and `notes/TODO.md` lists what is left: translating the greeting and a test for `greet()`."]],
    );
    await p.locator("button[data-action=new]").click();
    await pump();
    await until(async () => (await p.locator(".conversation-screen:not([hidden])").count()) === 1, "the conversation to open");
    await ui.settled();
    await h.runtime.client.setTitle(ui.of("opened")[0]!.conversation.id, "Friendlier greeting");

    // the user's message with an @-mentioned file
    const input = p.locator("textarea.composer-input");
    await input.fill("Make greet() friendlier and note what is left in notes/TODO.md. See @src/greet.py");
    await pump();
    await input.press("Enter");
    const sent = await pump();
    const submit = sent.find((m) => m.type === "submit");
    assert.ok(submit && submit.type === "submit");

    await until(async () => (await p.locator(".turn-files .turn-files-summary").count()) === 1 && (await p.locator("button[data-action=undo]:not([disabled])").count()) === 1, "the turn's files with Undo");
    await until(async () => ((await p.locator(".item-assistantMessage").last().getAttribute("data-status")) === "completed"), "the answer");
    await ui.settled();
    assert.equal(await p.locator(".turn-files-summary").textContent(), " 2 files changed +5 −1");
    const rows = await p.locator(".turn-file").evaluateAll((e) => e.map((li) => [".file-kind", ".file-name", ".file-dir"].map((c) => li.querySelector(c)?.textContent ?? "").join(" ")));
    assert.deepEqual(rows.sort(), ["A TODO.md notes", "M greet.py src"]);
    // file names in the answer open in the editor
    await p.locator(".item-assistantMessage code.file-link", { hasText: "src/greet.py:2" }).click();
    await pump();
    assert.deepEqual(ui.opened.at(-1), { path: "src/greet.py", line: 2 });
    // the context chip of the user's message
    assert.deepEqual(await p.locator(".item-userMessage .context-chip").allTextContents(), ["src/greet.py"]);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(page.violations, []);
    await page.screenshot("chat-turn-files");
    // the README's picture: the tool calls folded as a user leaves them (their output names this
    // test's temporary folder), the question, the answer and the turn's files in view
    const open = p.locator("details.item-toolCall[open] > summary .tool-name");
    for (let left = await open.count(); left > 0; left--) await open.first().click();
    assert.equal(await p.locator("details.item-toolCall[open]").count(), 0);
    await page.page.setViewportSize({ width: 520, height: 560 });
    await p.mouse.move(260, 420); // no hover actions in the picture
    await page.screenshot("chat-hero");
    // the README's picture is this one: OPENVAALA_UPDATE_DOCS=1 puts it in docs/ (else a test run
    // would change a tracked file every time)
    if (process.env.OPENVAALA_UPDATE_DOCS === "1") copyFileSync(join(EXTENSION_ROOT, "test-artifacts", "chat-hero.png"), join(EXTENSION_ROOT, "docs", "chat.png"));
    await page.page.setViewportSize({ width: 520, height: 860 });

    // a file opens VS Code's diff editor: the whole file before and after
    await p.locator(".turn-file-open", { hasText: "greet.py" }).click();
    await pump();
    const diff: DiffView | undefined = ui.diffs.at(-1);
    assert.ok(diff);
    assert.equal(diff.before, GREET);
    assert.equal(diff.after, GREET.replace('f"hi {name}"', 'f"Hello, {name}!"'));
    const shown = await screenshotDiff(diff, "chat-diff-editor");
    assert.deepEqual(shown.changes, [[2, 2, 2, 2]], "the diff editor shows the one changed line");

    // the user changes a file the turn wrote; Undo is refused in the runtime's words
    writeFileSync(join(h.runtime.workspace, "notes", "TODO.md"), "# TODO\n\n- translate the greeting\n- add a test for greet()\n- ask Ana about the wording\n");
    await p.locator("button[data-action=undo]").click();
    await pump();
    const conflict = p.locator(".revert-conflict");
    await until(async () => (await conflict.count()) === 1, "the refusal");
    assert.match((await conflict.locator(".conflict-message").textContent()) ?? "", /would overwrite: .*notes\/TODO\.md .*force/);
    assert.deepEqual(await conflict.locator(".conflict-files li").allTextContents(), ["notes/TODO.md"]);
    assert.deepEqual(await conflict.locator(".approval-buttons button").allTextContents(), ["Revert anyway", "Keep my changes"]);
    await page.screenshot("chat-undo-conflict");

    // Revert anyway: the files go back; the turn shows undone, with Redo
    await conflict.locator("button[data-action=revert-force]").click();
    await pump();
    await until(async () => (await p.locator("button[data-action=redo]").count()) === 1, "Redo");
    assert.equal(await p.locator(".turn-files .badge.undone").textContent(), "undone");
    await page.screenshot("chat-undone");

    // Redo: the turn's files are back, and so is Undo
    await p.locator("button[data-action=redo]").click();
    await pump();
    await until(async () => (await p.locator("button[data-action=undo]:not([disabled])").count()) === 1, "Undo again");
    assert.equal(await p.locator(".turn-files .badge.undone").count(), 0);
    assert.match(readFileSync(join(h.runtime.workspace, "src", "greet.py"), "utf8"), /Hello, \{name\}!/);
  });

  it("completes @-mentions from the workspace's files", async (t) => {
    const { page, pump, ui } = await live(t, { "src/greet.py": GREET, "src/greeting_test.py": "", "docs/guide.md": "", "README.md": "" });
    ui.files = new Map([["src/greet.py", GREET], ["src/greeting_test.py", ""], ["docs/guide.md", ""], ["README.md", ""]]);
    const p = page.page;
    await p.locator("button[data-action=new]").click();
    await pump();
    await until(async () => (await p.locator(".conversation-screen:not([hidden])").count()) === 1, "the conversation to open");
    const input = p.locator("textarea.composer-input");
    await input.click();
    await input.pressSequentially("Why does @gre");
    const posted = await pump();
    assert.deepEqual(posted.filter((m) => m.type === "mentionQuery").at(-1), { type: "mentionQuery", requestId: posted.filter((m) => m.type === "mentionQuery").length, query: "gre" });
    const list = p.locator(".mention-list");
    await until(async () => (await list.isVisible()) && (await list.locator(".mention-item").count()) === 2, "the completion");
    assert.deepEqual(await list.locator(".mention-item").evaluateAll((e) => e.map((li) => (li as HTMLElement).dataset.path)), ["src/greet.py", "src/greeting_test.py"]);
    await page.screenshot("chat-mention");
    await input.press("Enter");
    assert.equal(await input.inputValue(), "Why does @src/greet.py ");
    assert.equal(await list.isVisible(), false);
  });

  it("keeps a partial answer after the runtime host died mid-turn and says why", async (t) => {
    const { h, page, pump, ui } = await live(t, {});
    const p = page.page;
    await h.model.enqueue([["text", "The history is a record of what the agent did: each turn, "], ["pause", 60]]);
    await p.locator("button[data-action=new]").click();
    await pump();
    await until(async () => (await p.locator(".conversation-screen:not([hidden])").count()) === 1, "the conversation to open");
    const input = p.locator("textarea.composer-input");
    await input.fill("Why keep an agent's history in SQL?");
    await input.press("Enter");
    await pump();
    await until(async () => ((await p.locator(".item-assistantMessage .md").textContent()) ?? "").includes("each turn"), "the answer to stream");
    await new Promise((resolve) => setTimeout(resolve, 1_600)); // the runtime saves a streaming item a second after it grew
    process.kill(h.runtime.hostPid(), "SIGKILL");
    await until(async () => (await p.locator(".turn-reason.reason-runtimeStopped").count()) === 1, "the turn's reason");
    await until(async () => (await p.locator(".item-assistantMessage").getAttribute("data-status")) === "interrupted", "the saved partial answer");
    await ui.settled();
    await p.mouse.move(260, 500);
    assert.equal(await p.locator(".item-assistantMessage .badge.status-interrupted").textContent(), "interrupted");
    assert.match((await p.locator(".item-assistantMessage .md").textContent()) ?? "", /The history is a record of what the agent did: each turn,/);
    assert.match((await p.locator(".turn-reason").textContent()) ?? "", /runtime stopped during this turn/);
    await page.screenshot("chat-runtime-restart");
  });
});
