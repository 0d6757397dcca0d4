// The chat view's controller (everything behind the webview but the VS Code API) against the real
// runtime: what it posts to the view for the list, a conversation, a turn, a missing model; and the
// usage panel's query.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ChatController, readyStatus, type ClientProvider } from "../../src/chat/controller";
import { Emitter } from "../../src/client/emitter";
import type { OpenvaalaClient } from "../../src/client/openvaalaClient";
import { describeAgentPolicy } from "../../src/shared/agents";
import { USAGE_COLUMNS, loadUsage, sinceDay } from "../../src/usage/usageData";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ASKS_FOR_SHELL, LEAD_AND_HELPER, delegation, harness } from "../support/harness";
import { waitFor } from "../support/wait";
import { FakeUi } from "../support/fakeUi";

function provider(client: OpenvaalaClient): ClientProvider {
  return {
    folders: () => [{ key: "file:///ws", name: "ws" }],
    client: () => Promise.resolve(client),
    status: () => readyStatus(client),
    onDidChangeStatus: new Emitter<{ folder: string; status: never }>().event,
    onDidRestart: new Emitter<{ folder: string; client: OpenvaalaClient }>().event,
  };
}

describe("the chat controller against the real runtime", { timeout: 240_000 }, () => {
  it("lists, creates, streams a turn, renames, archives and deletes", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([["text", "Hi ", "there."]]);
    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client));
    t.after(() => controller.dispose());

    await controller.handle({ type: "ready" });
    const init = ui.of("init")[0];
    assert.ok(init);
    assert.deepEqual(init.folders, [{ key: "file:///ws", name: "ws" }]);
    const actions = ui.of("connection").at(-1)?.actions ?? [];
    assert.ok(actions.includes("openvaala/steerInput"));
    for (const action of actions) assert.ok(h.runtime.client.features.methods.has(action), `${action} is offered only when advertised`);
    assert.deepEqual(ui.of("conversations")[0]?.entries, []);

    await controller.handle({ type: "create" });
    const opened = ui.of("opened")[0];
    assert.ok(opened, "the new conversation opens");
    assert.equal(ui.of("session")[0]?.session.id, opened.mainSessionId);
    await waitFor(() => ui.of("models").length > 0 && ui.of("contextUsage").length > 0, "models and context usage");
    assert.equal(ui.of("contextUsage")[0]?.usage.window, 8000);

    await controller.handle({ type: "submit", content: [{ type: "text", text: "hello" }], mode: "queue" });
    await waitFor(
      () => ui.of("ops").some((m) => m.ops.some((op) => op.op === "saved" && op.item.type === "assistantMessage")),
      "the answer to be posted",
    );
    const deltas = ui.of("ops").flatMap((m) => m.ops).filter((op) => op.op === "delta");
    assert.ok(deltas.length > 0, "deltas were posted to the view as they came");

    ui.inputAnswer = "Greetings";
    await controller.handle({ type: "rename", conversationId: opened.conversation.id });
    assert.equal(ui.of("conversation").at(-1)?.conversation.title, "Greetings");

    await controller.handle({ type: "archive", conversationId: opened.conversation.id, archived: true });
    assert.equal(ui.of("conversation").at(-1)?.conversation.archived, true);

    ui.confirmAnswer = false;
    await controller.handle({ type: "delete", conversationId: opened.conversation.id });
    assert.equal(ui.of("closed").length, 0, "nothing is deleted without confirmation");

    ui.confirmAnswer = true;
    await controller.handle({ type: "delete", conversationId: opened.conversation.id });
    assert.equal(ui.of("closed").length, 1);
    const list = ui.of("conversations").at(-1);
    assert.ok(list && !list.entries.some((e) => e.conversation.id === opened.conversation.id));
    assert.deepEqual(ui.of("notice"), [], "no error was shown");
  });

  it("shows approval prompts, from events and after the view reloads, answers them, and says quietly when another window was first", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    await h.model.enqueue([["tool_call", "c1", "shell", ['{"command": "rm -rf build"}']], ["finish"]], [["text", "Left it."]]);
    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    const ready = ui.of("connection").at(-1)?.connection;
    assert.ok(ready?.state === "ready");
    assert.equal(ready.clientId, h.runtime.clientId, "the view knows its clientId, to tell its own answers");
    assert.deepEqual(ready.sandbox, h.runtime.client.features.sandbox);
    assert.equal(typeof ready.sandbox?.usable, "boolean", "the server says whether it can sandbox");
    assert.ok(ui.of("connection").at(-1)?.actions.includes("openvaala/answerApproval"));

    await controller.handle({ type: "create" });
    await controller.handle({ type: "submit", content: [{ type: "text", text: "clean up" }], mode: "queue" });
    const asked = await waitFor(
      () => ui.of("ops").flatMap((m) => m.ops).find((op) => op.op === "approval"),
      "the approval prompt to be posted",
    );
    assert.ok(asked.op === "approval");
    const itemId = asked.approval.itemId;
    assert.equal(asked.approval.approval.command, "rm -rf build");

    // the view reloads (or another window opens it): the prompt comes from the snapshot
    await controller.handle({ type: "ready" });
    const session = ui.of("session").at(-1);
    assert.deepEqual(session?.snapshot.approvals.map((a) => a.itemId), [itemId]);
    assert.equal(session?.snapshot.streaming.find((s) => s.item.id === itemId)?.item.status, "awaitingApproval");

    await controller.handle({ type: "approval", itemId, decision: "deny", message: "  keep the build  " });
    const closed = await waitFor(
      () => ui.of("ops").flatMap((m) => m.ops).find((op) => op.op === "approvalClosed" && op.itemId === itemId),
      "approvalResolved to be posted",
    );
    assert.ok(closed.op === "approvalClosed");
    assert.deepEqual(closed.outcome?.by, { kind: "client", name: "VS Code", clientId: h.runtime.clientId });

    // a second answer (as when two windows answer at once) is said on the card, not as an error
    await controller.handle({ type: "approval", itemId, decision: "allowOnce" });
    assert.deepEqual(ui.of("approvalAnswer").at(-1), { type: "approvalAnswer", itemId, outcome: "late", message: "Another window answered first." });
    await controller.handle({ type: "approval", itemId: "item_never_asked", decision: "allowOnce" });
    assert.equal(ui.of("approvalAnswer").at(-1)?.outcome, "gone");
    assert.deepEqual(ui.of("notice"), [], "no error was shown");
    await waitFor(() => ui.of("ops").some((m) => m.ops.some((op) => op.op === "turn" && op.phase === "completed")), "the turn to end");
    const result = ui.of("ops").flatMap((m) => m.ops).find((op) => op.op === "saved" && op.item.type === "toolResult");
    assert.ok(result?.op === "saved");
    assert.match(result.item.content?.[0]?.text ?? "", /keep the build/, "the denial's message went to the model (trimmed)");
  });

  it("shows a sub-agent's prompt in the main conversation's view, with the asking agent's session, and answers it from there", async (t) => {
    const h = await harness(t);
    await h.define(LEAD_AND_HELPER);
    await h.model.enqueue(...delegation("echo from the view > answered.txt"));
    const ui = new FakeUi();
    ui.agentAnswer = "lead";
    const controller = new ChatController(ui, provider(h.runtime.client));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await controller.handle({ type: "create" });
    const opened = ui.of("opened")[0];
    assert.ok(opened);
    const mainId = opened.mainSessionId;
    await controller.handle({ type: "submit", content: [{ type: "text", text: "delegate" }], mode: "queue" });

    // the prompt comes with the main session's ops (what the view's approval panel shows), naming
    // the sub-agent's session; the view gets that session, with its agent name, to label the card
    const mainOps = () => ui.of("ops").filter((m) => m.sessionId === mainId).flatMap((m) => m.ops);
    const asked = await waitFor(() => mainOps().find((op) => op.op === "approval"), "the sub-agent's prompt on the main session");
    assert.ok(asked.op === "approval");
    const { itemId, sessionId } = asked.approval;
    assert.notEqual(sessionId, mainId);
    assert.equal(asked.approval.approval.command, "echo from the view > answered.txt");
    assert.match(asked.approval.approval.reason ?? "", /shell/);
    const child = await waitFor(() => ui.of("session").find((m) => m.session.id === sessionId), "the sub-agent's session in the view");
    assert.equal(child.session.agentName, "helper");
    assert.equal(child.session.parentSessionId, mainId);

    // the view reloads mid-wait: the main session's snapshot holds the sub-agent's prompt
    await controller.handle({ type: "ready" });
    const reloaded = ui.of("session").filter((m) => m.session.id === mainId).at(-1);
    assert.deepEqual(reloaded?.snapshot.approvals, [asked.approval]);

    // the card's Allow once, from the main conversation's view
    await controller.handle({ type: "approval", itemId, decision: "allowOnce" });
    const closed = await waitFor(
      () => mainOps().find((op) => op.op === "approvalClosed" && op.itemId === itemId && op.outcome),
      "approvalResolved on the main session",
    );
    assert.ok(closed.op === "approvalClosed");
    assert.deepEqual(closed.outcome, { itemId, sessionId, decision: "allowOnce", by: { kind: "client", name: "VS Code", clientId: h.runtime.clientId } });
    await waitFor(() => mainOps().some((op) => op.op === "turn" && op.phase === "completed" && op.turn.status === "completed"), "the lead's turn to end");
    const file = join(h.runtime.workspace, "answered.txt");
    assert.ok(existsSync(file), "the sub-agent's command ran");
    assert.equal(readFileSync(file, "utf8"), "from the view\n");
    assert.deepEqual(ui.of("approvalAnswer"), [], "the answer counted");
    assert.deepEqual(ui.of("notice"), [], "no error was shown");
  });

  it("offers the agents on create when there are several, with their permissions and sandbox, and creates the conversation with the one picked", async (t) => {
    const h = await harness(t);
    await h.define([
      { name: "default" },
      { name: "reviewer", description: "Reviews changes", permissions: { default: "ask", tools: { read: "allow" } }, sandbox: { mode: "read-only" } },
    ]);
    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await controller.handle({ type: "create" });
    assert.deepEqual(ui.agentsOffered, [["default", "reviewer"]]);
    // listAgents gives them as defined (absent: the runtime's defaults), for the picker's detail
    const [plain, reviewer] = ui.agentInfos[0]!;
    assert.equal(plain?.permissions, undefined);
    assert.equal(plain?.sandbox, undefined);
    assert.deepEqual(reviewer?.permissions, { default: "ask", tools: { read: "allow" } });
    assert.deepEqual(reviewer?.sandbox, { mode: "read-only", network: false });
    assert.equal(describeAgentPolicy(reviewer!), "Permissions: read runs; other tools ask · Sandbox: read-only, no network");
    assert.match(describeAgentPolicy(plain!), /^Permissions: the defaults .* · Sandbox: workspace-write, no network \(the default\)$/);
    assert.equal(ui.of("opened").length, 0, "nothing is created when the pick is cancelled");
    ui.agentAnswer = "reviewer";
    await controller.handle({ type: "create" });
    assert.equal(ui.of("opened")[0]?.conversation.agentName, "reviewer");
    assert.deepEqual(ui.of("notice"), []);
  });

  it("says how to set up a model when none is configured", async (t) => {
    const h = await harness(t, { noModel: true });
    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await waitFor(() => ui.of("notice").length > 0, "the no-model notice");
    assert.equal(ui.of("notice")[0]?.fix?.command, "setup");
    await controller.handle({ type: "create" });
    await controller.handle({ type: "submit", content: [{ type: "text", text: "hello" }], mode: "queue" });
    const notice = ui.of("notice").at(-1);
    assert.match(notice?.message ?? "", /No model is configured/);
    assert.deepEqual(notice?.fix, { label: "Set up a model", command: "setup" });
    await controller.handle({ type: "submit", content: [{ type: "text", text: "hello again" }], mode: "queue" });
    assert.equal(ui.of("notice").filter((n) => /No model is configured/.test(n.message)).length, 1, "said once, not per send");
  });

  it("reads tokens and cost by day and model for the usage panel, the range cut to the data there is", async (t) => {
    const h = await harness(t);
    await h.runtime.client.rpc.request("openvaala/setDefinitions", {
      models: [
        {
          ref: { provider: "fake", name: "fake-model" },
          api: "openai-chat",
          baseUrl: h.model.baseUrl,
          apiKeyEnv: "FAKE_API_KEY",
          contextWindow: 8000,
          price: { currency: "USD", input: 2, output: 10 },
        },
      ],
      agents: [{ name: "default", titles: false }], // no title call: one model call, ours
    });
    await h.model.enqueue([["text", "ok"], ["finish", { prompt_tokens: 120_000, completion_tokens: 30_000 }]]);
    const { open, screen } = await h.conversation();
    await open.submit([{ type: "text", text: "count me" }]);
    await screen.turnCompleted();
    const described = await h.runtime.client.query("DESCRIBE usage_daily");
    const columns = described.rows.map((row) => row[0]);
    for (const column of [...USAGE_COLUMNS, "cost", "currency", "unpriced_calls"]) assert.ok(columns.includes(column), `usage_daily has ${column}`);
    const usage = await loadUsage((sql, parameters) => h.runtime.client.query(sql, parameters), 30);
    assert.equal(usage.span, 1, "one day of data");
    assert.equal(usage.days, 1, "the panel shows no 30 days over one day of data");
    assert.equal(usage.since, sinceDay(1));
    assert.equal(usage.rows.length, 1);
    const [row] = usage.rows;
    assert.equal(row?.provider, "fake");
    assert.equal(row?.model, "fake-model");
    assert.equal(row?.day, new Date().toISOString().slice(0, 10));
    assert.equal(row?.inputTokens, 120_000);
    assert.equal(row?.outputTokens, 30_000);
    assert.equal(row?.calls, 1);
    // 0.12M input at 2 and 0.03M output at 10 per million
    assert.ok(Math.abs((row?.cost ?? 0) - 0.54) < 1e-9, `cost ${row?.cost}`);
    assert.equal(row?.currency, "USD");
    assert.equal(row?.unpricedCalls, 0);
  });
});
