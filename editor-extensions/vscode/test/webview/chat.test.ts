// The chat webview in real headless Chromium, fed the recorded event stream of a real run
// (test/fixtures/session-stream.json) through the client's own timeline. Screenshots go to
// test-artifacts/.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Item } from "../../src/protocol/generated";
import type { HostMessage } from "../../src/shared/messages";
import { OPTIONAL_METHODS } from "../../src/client/openvaalaClient";
import { SessionTimeline } from "../../src/client/timeline";
import { Replay, loadFixture } from "../support/replay";
import { WebviewPage } from "../support/webviewPage";

const NEWER: string[] = ["openvaala/answerApproval", "openvaala/forkConversation", "openvaala/compactContext"];

describe("the chat webview in Chromium", { timeout: 60_000 }, () => {
  let page: WebviewPage;

  before(async () => {
    page = await WebviewPage.open("chat");
  });
  after(async () => {
    await page?.close();
  });

  it("lists conversations with search, the archived filter, running turns and per-entry actions", async () => {
    const replay = new Replay(loadFixture(), [...loadFixture().server.methods]);
    const [init] = replay.opening();
    assert.ok(init);
    const conversation = (id: string, title: string, archived = false) => ({
      conversation: { ...replay.conversation, id, title, archived, updatedAt: new Date(Date.now() - 5 * 60_000).toISOString() },
      running: false,
    });
    await page.send(init, {
      type: "conversations",
      entries: [conversation("conv_a", "Refactor the parser"), conversation("conv_b", "")],
      running: ["conv_a"],
      filter: { query: "", archived: false },
      append: false,
    });
    const p = page.page;
    const rows = p.locator(".conversation-row");
    assert.deepEqual(await rows.locator(".conversation-title").allTextContents(), ["Refactor the parser", "Untitled conversation"]);
    assert.deepEqual(await p.locator(".conversation-row.running").evaluateAll((e) => e.map((r) => (r as HTMLElement).dataset.conversationId)), ["conv_a"]);
    assert.equal(await rows.first().locator(".conversation-meta").textContent(), "5 min ago");
    await page.send({ type: "running", conversationIds: ["conv_b"] });
    assert.deepEqual(await p.locator(".conversation-row.running").evaluateAll((e) => e.map((r) => (r as HTMLElement).dataset.conversationId)), ["conv_b"]);
    await page.screenshot("chat-list");

    await page.clearPosted();
    await p.locator("input.search").fill("parser");
    await p.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    await p.locator("input.archived-toggle").check();
    await rows.first().hover();
    await rows.first().locator("button[data-action=rename]").click();
    await rows.first().locator("button[data-action=archive]").click();
    await rows.first().locator("button[data-action=delete]").click();
    await rows.first().locator(".conversation-title").click();
    await p.locator("button[data-action=new]").click();
    assert.deepEqual(await page.posted(), [
      { type: "list", filter: { query: "parser", archived: false } },
      { type: "list", filter: { query: "parser", archived: true } },
      { type: "rename", conversationId: "conv_a" },
      { type: "archive", conversationId: "conv_a", archived: true },
      { type: "delete", conversationId: "conv_a" },
      { type: "open", conversationId: "conv_a" },
      { type: "create" },
    ]);
  });

  it("renders the recorded run: streamed text, folded reasoning, tool calls with results, approvals, queued input", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    await page.send(...replay.opening());
    const p = page.page;
    let streamedChecked = false;
    let pendingChecked = false;
    const approvalsChecked: string[] = [];
    let answerId = "";
    for (const step of replay.steps()) {
      await page.send(...step.messages);
      const delta = step.events.find((event) => event.type === "itemDelta" && event.delta.includes("What is here"));
      if (!streamedChecked && delta && delta.type === "itemDelta") {
        answerId = delta.itemId;
        const streaming = p.locator(`.item[data-item-id="${answerId}"]`);
        assert.equal(await streaming.getAttribute("data-status"), "streaming");
        assert.equal(await streaming.locator("h2").textContent(), "What is here");
        assert.equal(await streaming.locator("button[data-action=fork]").isDisabled(), true, "a running turn cannot be forked yet");
        // mark the node: after the answer is saved, the very same element must be on screen
        await streaming.evaluate((element) => ((element as unknown as { mark: string }).mark = "streamed"));
        await page.screenshot("chat-streaming");
        streamedChecked = true;
      }
      if (!pendingChecked && step.events.some((event) => event.type === "pendingInputAdded" && textOf(event.item).startsWith("Now change"))) {
        const row = p.locator(".pending-row");
        assert.equal(await row.count(), 1);
        assert.match((await row.textContent()) ?? "", /queued.*Now change the greeting to openvaala\./);
        assert.deepEqual(await row.locator("button").allTextContents(), ["Steer", "Send now", "Withdraw"]);
        assert.equal(await row.locator("button[data-action=steer]").isEnabled(), true, "steering is possible while the turn runs");
        await page.clearPosted();
        await row.locator("button[data-action=withdraw]").click();
        const itemId = await row.getAttribute("data-item-id");
        assert.deepEqual(await page.posted(), [{ type: "withdraw", itemId }]);
        await page.screenshot("chat-pending");
        pendingChecked = true;
      }
      // the runtime's approval events, as recorded: the prompt opens, the call waits, and when the
      // answer comes the prompt closes and the call says who decided
      for (const event of step.events) {
        if (event.type === "approvalRequested") {
          const card = p.locator(`.approval-card[data-item-id="${event.itemId}"]`);
          assert.equal(await card.count(), 1, "the prompt is shown");
          assert.equal(await card.locator(".tool-command").textContent(), `$ ${event.approval.command}`);
          assert.equal(await card.locator(".approval-reason").textContent(), event.approval.reason);
          assert.deepEqual(await card.locator(".approval-choices button").allTextContents(), ["Allow once", "Allow always", "Deny"]);
          const call = p.locator(`.item-toolCall[data-item-id="${event.itemId}"]`);
          assert.equal(await call.getAttribute("data-status"), "awaitingApproval");
          assert.equal(await call.locator(".badge.status-awaitingApproval").textContent(), "waiting for approval");
          await page.screenshot(approvalsChecked.length === 0 ? "chat-approval" : "chat-approval-deny");
        }
        if (event.type === "approvalResolved") {
          assert.equal(await p.locator(`.approval-card[data-item-id="${event.itemId}"]`).count(), 0, "the prompt closed");
          const note = p.locator(`.item-toolCall[data-item-id="${event.itemId}"] .approval-note`);
          const expected = event.decision === "deny" ? "Denied by VS Code (this window)" : "Allowed once by VS Code (this window)";
          assert.equal(await note.textContent(), expected);
          approvalsChecked.push(event.decision);
        }
      }
    }
    assert.ok(streamedChecked && pendingChecked, "the fixture streamed the answer and queued an input");
    assert.deepEqual(approvalsChecked, ["allowOnce", "deny"], "the fixture allowed one command and denied one");

    // the user's messages
    assert.deepEqual(await p.locator(".item-userMessage .bubble").allTextContents(), [
      "What is in this project? Then say hi.",
      "Now change the greeting to openvaala.",
    ]);
    // reasoning, folded
    const reasoning = p.locator("details.item-reasoning");
    assert.equal(await reasoning.count(), 1);
    assert.equal(await reasoning.evaluate((element) => (element as unknown as { open: boolean }).open), false);
    assert.match((await reasoning.locator(".reasoning-body").textContent()) ?? "", /I should list the files and say hi with the shell\./);
    // the shell call with its command, who allowed it, and the output inside it
    const shell = p.locator("details.item-toolCall", { has: p.locator(".tool-summary", { hasText: "echo hi && ls" }) });
    assert.equal(await shell.locator(".tool-command").textContent(), "$ echo hi && ls");
    assert.equal(await shell.locator(".approval-note.allowed").textContent(), "Allowed once by VS Code (this window)");
    assert.equal(await shell.locator(".tool-output").textContent(), "hi\ngreeting.txt\n[exit code 0]");
    assert.equal(await p.locator(".item-toolResult:not(.shown-in-call)").count(), 0, "results show inside their calls");
    // the denied call: who denied it, and what the model read
    const denied = p.locator("details.item-toolCall", { has: p.locator(".tool-summary", { hasText: "rm -rf build/" }) });
    assert.equal(await denied.locator(".approval-note.denied").textContent(), "Denied by VS Code (this window)");
    assert.match((await denied.locator(".tool-output.error").textContent()) ?? "", /the user denied this call .*Keep build\/, I still need it\./);
    // the edit as a diff
    const edit = p.locator("details.item-toolCall", { has: p.locator(".tool-name", { hasText: "edit" }) });
    assert.equal(await edit.locator(".diff-path").textContent(), "greeting.txt");
    assert.deepEqual(await edit.locator(".diff-removed .diff-text").allTextContents(), ["hello world"]);
    assert.deepEqual(await edit.locator(".diff-added .diff-text").allTextContents(), ["hello openvaala"]);
    // the final answer replaced the streamed one in place, rendered as markdown, inert
    const answer = p.locator(`.item[data-item-id="${answerId}"]`);
    assert.equal(await answer.getAttribute("data-status"), "completed");
    assert.equal(await answer.locator("button[data-action=fork]").isEnabled(), true, "the turn ended: it can be forked");
    assert.equal(await answer.evaluate((element) => (element as unknown as { mark?: string }).mark), "streamed");
    assert.equal(await p.locator(`[data-item-id="${answerId}"]`).count(), 1);
    assert.deepEqual(await answer.locator("li").allTextContents(), ["It greets the world", "It is short"]);
    assert.equal(await answer.locator("pre code").textContent(), "echo hi\n");
    assert.equal(await p.locator(".md script, .md img, .md [onerror], .md a[href^=javascript]").count(), 0);
    assert.match((await answer.textContent()) ?? "", /<script>alert\(1\)<\/script>/, "markup shows as text");
    // the turn is over: nothing queued or asked, the composer sends again
    assert.equal(await p.locator(".pending-row").count(), 0);
    assert.equal(await p.locator(".approval-card").count(), 0);
    assert.equal(await p.locator("button[data-action=send]").textContent(), "Send");
    // the sandbox state of the recorded server, in the header
    const badge = p.locator(".conversation-header .sandbox-badge");
    assert.equal(await badge.textContent(), "Sandboxed");
    assert.match((await badge.getAttribute("title")) ?? "", /^Sandboxed: Shell commands run in a sandbox/);
    assert.deepEqual(page.violations, [], "the view runs under its Content-Security-Policy");
    assert.deepEqual(page.errors, []);
    await page.screenshot("chat-final");
  });

  it("answers approvals: allow once, allow always, deny with a message for the model; quiet when another window was first", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const fixture = loadFixture();
    const replay = new Replay(fixture);
    await page.send(...replay.opening());
    for (const step of replay.steps()) await page.send(...step.messages);
    const p = page.page;
    const ask = (itemId: string, command: string): HostMessage =>
      replay.apply([
        {
          type: "approvalRequested",
          itemId,
          sessionId: fixture.sessionId,
          approval: { tool: "shell", arguments: { command, workdir: "build" }, reason: "the agent's rule for shell: ask", command, paths: ["build"] },
        },
      ]);
    const other = { kind: "client" as const, name: "VS Code", clientId: "vscode-another-window" };

    // allow once and allow always post at once
    for (const [itemId, decision, label] of [
      ["call_a", "allowOnce", "Allow once"],
      ["call_b", "allowAlways", "Allow always"],
    ] as const) {
      await page.send(ask(itemId, `make ${itemId}`));
      const card = p.locator(`.approval-card[data-item-id="${itemId}"]`);
      assert.deepEqual(await card.locator(".approval-paths li").allTextContents(), ["build"]);
      await page.clearPosted();
      await card.getByRole("button", { name: label, exact: true }).click();
      assert.deepEqual(await page.posted(), [{ type: "approval", itemId, decision }]);
      assert.equal(await card.locator("button:enabled").count(), 0, "answered once");
      await page.send(replay.apply([{ type: "approvalResolved", itemId, sessionId: fixture.sessionId, decision, by: { ...other, clientId: fixture.clientId! } }]));
      assert.equal(await card.count(), 0);
    }
    // allow always is remembered by the conversation (conversationUpdated): the header says what
    const allowed = p.locator(".conversation-header .always-allowed");
    assert.equal(await allowed.isVisible(), false);
    const alwaysAllowed = [{ tool: "shell", commandPrefix: "make", outsideSandbox: false }];
    await page.send({ type: "conversation", conversation: { ...replay.conversation, alwaysAllowed } });
    assert.equal(await allowed.textContent(), "1 always allowed");
    assert.equal(
      await allowed.getAttribute("title"),
      'Allowed for the rest of this conversation, without asking:\nshell: commands starting with "make"',
    );

    // deny asks for an optional message first: Back returns, Enter sends it
    await page.send(ask("call_c", "rm -rf build"));
    const card = p.locator('.approval-card[data-item-id="call_c"]');
    await page.clearPosted();
    await card.getByRole("button", { name: "Deny", exact: true }).click();
    const message = card.locator("textarea.deny-message");
    assert.equal(await message.isVisible(), true);
    await card.locator("button[data-decision=deny-cancel]").click();
    assert.equal(await message.isVisible(), false);
    assert.deepEqual(await page.posted(), [], "nothing is sent until the denial is confirmed");
    await card.getByRole("button", { name: "Deny", exact: true }).click();
    await message.fill("Not the build directory, please.");
    await page.screenshot("chat-approval-deny-message");
    await message.press("Enter");
    assert.deepEqual(await page.posted(), [{ type: "approval", itemId: "call_c", decision: "deny", message: "Not the build directory, please." }]);

    // another window answered first: said on the card, no error; then approvalResolved closes it
    await page.send({ type: "approvalAnswer", itemId: "call_c", outcome: "late", message: "Another window answered first." });
    assert.equal(await card.locator(".approval-status").textContent(), "Another window answered first.");
    assert.equal(await p.locator(".notice").count(), 0, "no error notice");
    await page.send(replay.apply([{ type: "approvalResolved", itemId: "call_c", sessionId: fixture.sessionId, decision: "allowOnce", by: other }]));
    assert.equal(await card.count(), 0);

    // a failed answer gives the buttons back
    await page.send(ask("call_d", "make d"));
    const retry = p.locator('.approval-card[data-item-id="call_d"]');
    await retry.getByRole("button", { name: "Allow once", exact: true }).click();
    await page.send({ type: "approvalAnswer", itemId: "call_d", outcome: "failed", message: "The openvaala runtime is not reachable" });
    assert.equal(await retry.getByRole("button", { name: "Allow once", exact: true }).isEnabled(), true);
    assert.equal(await retry.locator(".approval-status").textContent(), "The openvaala runtime is not reachable");

    // a prompt of a call on screen: the call says who answered, from another window
    const calls = replay.timeline.snapshot().items.filter((logged) => logged.item.type === "toolCall");
    const lastCall = calls.at(-1)!.item;
    await page.send(replay.apply([{ type: "approvalResolved", itemId: lastCall.id, sessionId: fixture.sessionId, decision: "allowAlways", by: other }]));
    assert.equal(
      await p.locator(`.item-toolCall[data-item-id="${lastCall.id}"] .approval-note`).textContent(),
      "Allowed for this conversation by VS Code (another window)",
    );
    // the actions the server advertises are offered
    await page.clearPosted();
    await p.locator(".item-assistantMessage").last().hover();
    await p.locator(".item-assistantMessage").last().locator("button[data-action=fork]").click();
    const fork = (await page.posted())[0];
    assert.ok(fork?.type === "fork" && fork.turnId.startsWith("turn_"));
    assert.equal(await p.locator(".header-actions button[data-action=compact]").count(), 1);
    assert.deepEqual(page.errors, []);
  });

  it("shows a sub-agent's prompt in the main view, names the agent that asks, answers it there, and notes who decided on its call", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const fixture = loadFixture();
    const replay = new Replay(fixture);
    await page.send(...replay.opening());
    for (const step of replay.steps()) await page.send(...step.messages);
    const p = page.page;
    const sub = "sess_helper";
    const request = { tool: "shell", arguments: { command: "make docs" }, reason: "the agent's rule for shell: ask", command: "make docs" };
    // the runtime sends a sub-agent's question to the main session's subscribers, usually before
    // the sub-agent's session reached the view
    await page.send(replay.apply([{ type: "approvalRequested", itemId: "call_sub", sessionId: sub, approval: request }]));
    const card = p.locator('.approval-card[data-item-id="call_sub"]');
    assert.equal(await card.getAttribute("data-session-id"), sub);
    assert.equal(await card.locator(".approval-reason").textContent(), request.reason);
    assert.equal(await card.locator(".approval-origin").textContent(), "Asked by the sub-agent (starting…) Show the call");

    // its session arrives (its own subscription holds the waiting call and the prompt too)
    const last = replay.timeline.snapshot().items.at(-1)!;
    const call: Item = {
      id: "call_sub",
      conversationId: replay.conversation.id,
      sessionId: sub,
      type: "toolCall",
      status: "streaming",
      createdAt: last.item.createdAt,
      toolCall: { callId: "c9", name: "shell", arguments: '{"command": "make docs"}' },
    };
    const child = new SessionTimeline(sub);
    child.applyEvents([
      { type: "itemStarted", itemIndex: 0, item: call },
      { type: "approvalRequested", itemId: "call_sub", sessionId: sub, approval: request },
    ]);
    const session = { id: sub, conversationId: replay.conversation.id, agentName: "helper", createdAt: call.createdAt, model: {}, parentSessionId: fixture.sessionId };
    await page.send({ type: "session", session, anchor: last.ordinal, snapshot: child.snapshot() });
    assert.equal(await card.locator(".approval-agent").textContent(), "helper");
    assert.equal(await card.getAttribute("aria-label"), "Allow shell? Asked by the sub-agent helper");
    assert.equal(await p.locator(".approval-card").count(), 1, "one card, though both sessions hold the prompt");
    const nestedCall = p.locator(`details.subsession[data-session-id=${sub}] .item-toolCall[data-item-id="call_sub"]`);
    assert.equal(await nestedCall.getAttribute("data-status"), "awaitingApproval");
    await page.screenshot("chat-approval-subagent");

    // "Show the call" unfolds the sub-agent's session
    const nested = p.locator(`details.subsession[data-session-id=${sub}]`);
    await nested.evaluate((element) => ((element as unknown as { open: boolean }).open = false));
    await card.locator("button[data-action=reveal]").click();
    assert.equal(await nested.evaluate((element) => (element as unknown as { open: boolean }).open), true);

    // answered from the main view, like any prompt
    await page.clearPosted();
    await card.getByRole("button", { name: "Allow once", exact: true }).click();
    assert.deepEqual(await page.posted(), [{ type: "approval", itemId: "call_sub", decision: "allowOnce" }]);
    // approvalResolved heard on the main session (the sub-agent's own subscription may lag): the
    // prompt closes and the sub-agent's call says who decided
    const by = { kind: "client" as const, name: "VS Code", clientId: fixture.clientId! };
    await page.send(replay.apply([{ type: "approvalResolved", itemId: "call_sub", sessionId: sub, decision: "allowOnce", by }]));
    assert.equal(await card.count(), 0);
    assert.equal(await nestedCall.locator(".approval-note").textContent(), "Allowed once by VS Code (this window)");
    // the same event on the sub-agent's subscription changes nothing more
    const ops = child.applyEvents([{ type: "approvalResolved", itemId: "call_sub", sessionId: sub, decision: "allowOnce", by }]);
    await page.send({ type: "ops", sessionId: sub, ops });
    assert.equal(await p.locator(".approval-card").count(), 0);
    assert.equal(await nestedCall.getAttribute("data-status"), "streaming");
    assert.equal(await nestedCall.locator(".approval-note").count(), 1);
    assert.deepEqual(page.errors, []);
  });

  it("shows the sandbox state, and says when shell commands cannot be sandboxed", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    const [init] = replay.opening();
    assert.ok(init?.type === "init" && init.connection.state === "ready");
    const p = page.page;
    const badge = p.locator(".list-toolbar .sandbox-badge");
    await page.send(init);
    assert.equal(await badge.textContent(), "Sandboxed");
    assert.equal(await badge.getAttribute("data-sandbox"), "on");
    const unusable = { ...init.connection, sandbox: { usable: false, reason: "bwrap: setting up uid map: Permission denied" } };
    await page.send({ type: "connection", folder: "file:///ws", connection: unusable, actions: init.actions });
    assert.equal(await badge.textContent(), "No sandbox");
    assert.equal(await badge.getAttribute("data-sandbox"), "off");
    assert.match((await badge.getAttribute("title")) ?? "", /cannot start here: bwrap: setting up uid map: Permission denied\. Shell commands ask/);
    await page.clearPosted();
    await badge.click();
    assert.deepEqual(await page.posted(), [{ type: "command", command: "status" }]);
    await page.send({ type: "connection", folder: "file:///ws", connection: { state: "reconnecting", message: "openvaala-lsp stopped; restarting…" }, actions: [] });
    assert.equal(await badge.isVisible(), false, "no claim while not connected");
  });

  it("keeps the newest content in view, also when a prompt takes room, until the user scrolls up", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    await page.send(...replay.opening());
    for (const step of replay.steps()) await page.send(...step.messages);
    const p = page.page;
    const distance = () =>
      p.evaluate(() => {
        const timeline = document.querySelector(".timeline") as HTMLElement;
        return timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight;
      });
    const settled = () => page.screenshot("chat-scroll"); // waits for the view's animation frames
    await settled();
    assert.ok((await distance()) < 2, "at the bottom after the run");
    const ask = (itemId: string) =>
      replay.apply([{ type: "approvalRequested", itemId, sessionId: replay.fixture.sessionId, approval: { tool: "shell", arguments: { command: "make" }, command: "make" } }]);
    await page.send(ask("call_room"));
    await settled();
    assert.ok((await distance()) < 2, "still at the bottom when the prompt took room from the timeline");
    // the user scrolls up to read: new content no longer pulls the view down
    await p.locator(".timeline").hover();
    await p.mouse.wheel(0, -400);
    await p.waitForFunction(() => {
      const timeline = document.querySelector(".timeline") as HTMLElement;
      return timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight > 300;
    });
    await page.send(replay.apply([{ type: "approvalResolved", itemId: "call_room", sessionId: replay.fixture.sessionId, decision: "deny", by: { kind: "user" } }]), ask("call_more"));
    await settled();
    assert.ok((await distance()) > 300, "the view stays where the user scrolled");
  });

  it("hides what the server does not answer", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const fixture = loadFixture();
    // a server without fork, compact or approvals (older than protocol 0.3)
    const replay = new Replay(fixture, OPTIONAL_METHODS.filter((method) => !NEWER.includes(method)));
    await page.send(...replay.opening());
    for (const step of replay.steps()) await page.send(...step.messages);
    const p = page.page;
    assert.equal(await p.locator("button[data-action=fork]").count(), 0);
    assert.equal(await p.locator("button[data-action=compact]").count(), 0);
    await page.send(replay.apply([{ type: "approvalRequested", itemId: "call_z", sessionId: fixture.sessionId, approval: { tool: "edit", arguments: { path: "a" } } }]));
    const card = p.locator(".approval-card");
    assert.equal(await card.locator("button:enabled").count(), 0, "no answer can be sent without answerApproval");
    assert.match((await card.textContent()) ?? "", /cannot take answers yet/);
  });

  it("sends input: Enter queues, Ctrl+Enter steers and Alt+Enter interrupts while a turn runs; pasted images go along", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    await page.send(...replay.opening());
    const p = page.page;
    const input = p.locator("textarea.composer-input");
    await page.clearPosted();
    await input.fill("first question");
    await input.press("Enter");
    assert.deepEqual(await page.posted(), [{ type: "submit", content: [{ type: "text", text: "first question" }], mode: "queue" }]);
    assert.equal(await input.inputValue(), "");

    await page.send({ type: "ops", sessionId: replay.fixture.sessionId, ops: [{ op: "status", status: { state: "running", activeTurnId: "turn_1" } }] });
    assert.equal(await p.locator("button[data-action=send]").textContent(), "Queue");
    assert.equal(await p.locator("button[data-action=stop]").isVisible(), true);
    await page.clearPosted();
    await input.fill("steer me");
    await input.press("Control+Enter");
    await input.fill("stop and do this");
    await input.press("Alt+Enter");
    await p.locator("button[data-action=stop]").click();
    assert.deepEqual(await page.posted(), [
      { type: "submit", content: [{ type: "text", text: "steer me" }], mode: "steer" },
      { type: "submit", content: [{ type: "text", text: "stop and do this" }], mode: "interrupt" },
      { type: "interrupt" },
    ]);

    // a pasted PNG becomes image content
    await page.clearPosted();
    await input.fill("what is this?");
    await input.evaluate((element) => {
      const bytes = Uint8Array.from([137, 80, 78, 71, 13, 10, 26, 10]);
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], "shot.png", { type: "image/png" }));
      element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    });
    await p.locator(".attachment-chip img").waitFor();
    await input.press("Enter");
    const [sent] = await page.posted();
    assert.deepEqual(sent, {
      type: "submit",
      content: [{ type: "text", text: "what is this?" }, { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
      mode: "queue",
    });
  });

  it("nests a sub-agent's session where it started", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    await page.send(...replay.opening());
    for (const step of replay.steps()) await page.send(...step.messages);
    const p = page.page;
    const items = replay.timeline.snapshot().items;
    const shellCall = items.find((logged) => logged.item.type === "toolCall")!;
    const child = {
      id: "sess_child",
      conversationId: replay.conversation.id,
      agentName: "reviewer",
      createdAt: shellCall.item.createdAt,
      model: { model: { provider: "fake", name: "fake-model" } },
      parentSessionId: replay.fixture.sessionId,
    };
    const empty = { items: [], streaming: [], pending: [], approvals: [], outcomes: [], status: { state: "running" as const }, hasEarlier: false, errors: [] };
    await page.send({ type: "session", session: child, anchor: shellCall.ordinal, snapshot: empty });
    const found: Item = { ...shellCall.item, id: "item_child_1", sessionId: "sess_child", type: "assistantMessage", content: [{ type: "text", text: "The reviewer found **nothing** to fix." }] };
    await page.send({ type: "ops", sessionId: "sess_child", ops: [{ op: "saved", ordinal: 100, item: found }] });
    const nested = p.locator("details.subsession[data-session-id=sess_child]");
    assert.match((await nested.locator("summary").textContent()) ?? "", /Sub-agent: reviewer.*fake\/fake-model/);
    assert.equal(await nested.locator(".item-assistantMessage strong").textContent(), "nothing");
    // right after the parent's item it is anchored to
    const previous = await nested.evaluate((element) => (element.previousElementSibling as HTMLElement | null)?.dataset.itemId);
    assert.equal(previous, shellCall.item.id);
  });

  it("appends deltas without re-rendering the conversation, even a long one", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const replay = new Replay(loadFixture());
    const [init, opened, session] = replay.opening();
    assert.ok(init && opened && session && session.type === "session");
    const base: Item = {
      id: "",
      conversationId: replay.conversation.id,
      sessionId: replay.fixture.sessionId,
      type: "assistantMessage",
      status: "completed",
      createdAt: "2026-01-01T00:00:00.000Z",
    };
    const many = Array.from({ length: 400 }, (_, index) => ({
      ordinal: index + 1,
      item: { ...base, id: `item_old_${index}`, type: "assistantMessage" as const, content: [{ type: "text" as const, text: `Message **${index}** with some text.` }] },
    }));
    await page.send(init, opened, { ...session, snapshot: { ...session.snapshot, items: many, streaming: [] } });
    const p = page.page;
    assert.equal(await p.locator(".item-assistantMessage").count(), 400);
    await p.evaluate(() => {
      for (const element of Array.from(document.querySelectorAll(".item"))) (element as unknown as { mark: boolean }).mark = true;
    });
    const sessionId = replay.fixture.sessionId;
    const streamed: Item = { ...base, id: "item_new", type: "assistantMessage", status: "streaming", content: [{ type: "text", text: "" }] };
    await page.send({ type: "ops", sessionId, ops: [{ op: "streaming", itemIndex: 0, item: streamed }] });
    const started = Date.now();
    for (let batch = 0; batch < 20; batch++) {
      const ops = Array.from({ length: 25 }, (_, index) => ({ op: "delta" as const, itemId: "item_new", delta: `Paragraph ${batch}.${index} grows.\n\n` }));
      await page.send({ type: "ops", sessionId, ops });
      if (batch === 1) {
        await p.evaluate(() => ((document.querySelector('[data-item-id="item_new"] .md-stable p') as unknown as { mark: boolean }).mark = true));
      }
    }
    const elapsed = Date.now() - started;
    const unchanged = await p.evaluate(() => Array.from(document.querySelectorAll(".item")).filter((e) => (e as unknown as { mark?: boolean }).mark).length);
    assert.equal(unchanged, 400, "no earlier item was rendered again");
    const firstParagraph = await p.evaluate(() => (document.querySelector('[data-item-id="item_new"] .md-stable p') as unknown as { mark?: boolean }).mark);
    assert.equal(firstParagraph, true, "finished paragraphs of the streaming answer are rendered once");
    assert.equal(await p.locator('[data-item-id="item_new"] p').count(), 500);

    // older history loads on request, above what is there
    const older = Array.from({ length: 3 }, (_, index) => ({
      ordinal: index + 1,
      item: { ...base, id: `item_older_${index}`, content: [{ type: "text" as const, text: `Older ${index}` }] },
    }));
    await page.send(init, opened, { ...session, snapshot: { ...session.snapshot, items: many.map((l) => ({ ...l, ordinal: l.ordinal + 3 })), streaming: [], hasEarlier: true } });
    await page.clearPosted();
    await p.locator("button.load-earlier").click();
    assert.deepEqual(await page.posted(), [{ type: "loadEarlier", sessionId }]);
    await page.send({ type: "ops", sessionId, ops: [{ op: "earlier", items: older, hasEarlier: false }] });
    const firstTexts = await p.locator(".item-assistantMessage .md").evaluateAll((elements) => elements.slice(0, 4).map((e) => e.textContent?.trim()));
    assert.deepEqual(firstTexts, ["Older 0", "Older 1", "Older 2", "Message 0 with some text."]);
    assert.equal(await p.locator("button.load-earlier").isVisible(), false);
    console.log(`# 500 deltas into a 400-item conversation: ${elapsed} ms (20 messages, each rendered)`);
  });

  it("shows a banner once however often it comes again, its backticks as code", async () => {
    await page.page.reload();
    await page.page.waitForFunction(() => (globalThis as unknown as { __posted: unknown[] }).__posted.length > 0);
    const p = page.page;
    const noModel: HostMessage = {
      type: "notice",
      level: "error",
      message: "No model is configured. Set one up with `openvaala setup` (it asks for the provider and checks it).",
      fix: { label: "Set up a model", command: "setup" },
    };
    // a retry that fails the same way three times, then another error
    await page.send(noModel, noModel, noModel, { type: "notice", level: "error", message: "the provider said *no*" });
    assert.equal(await p.locator(".notice").count(), 2);
    const first = p.locator(".notice").filter({ hasText: "No model is configured" });
    assert.equal(await first.count(), 1);
    assert.equal(await first.locator(".notice-text code").textContent(), "openvaala setup");
    assert.doesNotMatch((await first.textContent()) ?? "", /`/);
    assert.equal(await p.locator(".notice").last().locator("em").textContent(), "no");
    // the same banner again moves to the end (it is the newest news), still once
    await page.send(noModel);
    assert.equal(await p.locator(".notice").count(), 2);
    assert.match((await p.locator(".notice").last().textContent()) ?? "", /No model is configured/);
    assert.deepEqual(page.errors, []);
  });
});

function textOf(item: Item): string {
  return (item.content ?? []).map((part) => part.text ?? "").join("");
}
