// SessionTimeline: the snapshot + stream rule, deltas, replacement of streamed items, and resyncs.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SessionTimeline, approvalFromItem } from "../../src/client/timeline";
import type { Item, SubscribeSessionResult } from "../../src/protocol/generated";

let counter = 0;
function item(overrides: Partial<Item> & Pick<Item, "type">): Item {
  counter++;
  return {
    id: `item_${counter}`,
    conversationId: "conv_1",
    sessionId: "sess_1",
    status: "completed",
    createdAt: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

const message = (text: string, status: Item["status"] = "completed", id?: string): Item =>
  item({ type: "assistantMessage", status, content: [{ type: "text", text }], ...(id ? { id } : {}) });

function subscribed(overrides: Partial<SubscribeSessionResult> = {}): SubscribeSessionResult {
  return { subscriptionId: "sub_1", lastSavedOrdinal: 0, pendingInputs: [], streamingItems: [], pendingApprovals: [], ...overrides };
}

describe("SessionTimeline", () => {
  it("streams deltas into an item and replaces it with the saved one", () => {
    const timeline = new SessionTimeline("sess_1");
    const streamed = message("", "streaming", "item_a");
    const ops = timeline.applyEvents([
      { type: "itemStarted", itemIndex: 0, item: streamed },
      { type: "itemDelta", itemIndex: 0, itemId: "item_a", delta: "Hel" },
      { type: "itemDelta", itemIndex: 0, itemId: "item_a", delta: "lo" },
    ]);
    assert.deepEqual(ops.map((op) => op.op), ["streaming", "delta", "delta"]);
    assert.equal(timeline.snapshot().streaming[0]?.item.content?.[0]?.text, "Hello");
    const saved = timeline.applyEvents([{ type: "itemCompleted", ordinal: 1, item: message("Hello", "completed", "item_a") }]);
    assert.deepEqual(saved.map((op) => op.op), ["saved"]);
    const snapshot = timeline.snapshot();
    assert.deepEqual(snapshot.streaming, []);
    assert.deepEqual(snapshot.items.map((l) => [l.ordinal, l.item.id, l.item.status]), [[1, "item_a", "completed"]]);
    assert.equal(timeline.lastOrdinal, 1);
  });

  it("appends tool-call deltas to the arguments", () => {
    const timeline = new SessionTimeline("sess_1");
    const call = item({ id: "call_item", type: "toolCall", status: "streaming", toolCall: { callId: "c1", name: "shell", arguments: "" } });
    timeline.applyEvents([
      { type: "itemStarted", itemIndex: 2, item: call },
      { type: "itemDelta", itemIndex: 2, itemId: "call_item", delta: '{"command":' },
      { type: "itemDelta", itemIndex: 2, itemId: "call_item", delta: ' "ls"}' },
    ]);
    assert.equal(timeline.item("call_item")?.toolCall?.arguments, '{"command": "ls"}');
  });

  it("shows an item listed and announced both exactly once", () => {
    const timeline = new SessionTimeline("sess_1");
    const first = message("one");
    timeline.loadLatest([{ ordinal: 3, item: first }], false);
    const ops = timeline.applyEvents([
      { type: "itemCompleted", ordinal: 3, item: first },
      { type: "itemDelta", itemIndex: 0, itemId: first.id, delta: "late" },
      { type: "itemStarted", itemIndex: 0, item: { ...first, status: "streaming" } },
    ]);
    assert.deepEqual(ops, [], "nothing changes for an item already saved");
    assert.equal(timeline.snapshot().items.length, 1);
  });

  it("keeps saved items in ordinal order whatever order they come in", () => {
    const timeline = new SessionTimeline("sess_1");
    const [a, b, c] = [message("a"), message("b"), message("c")];
    timeline.addSaved([{ ordinal: 5, item: c }, { ordinal: 2, item: a }]);
    timeline.applyEvents([{ type: "itemCompleted", ordinal: 4, item: b }]);
    assert.deepEqual(timeline.snapshot().items.map((l) => l.ordinal), [2, 4, 5]);
  });

  it("after a resync, drops streamed items the runtime no longer has and keeps what it has", () => {
    const timeline = new SessionTimeline("sess_1");
    timeline.applyEvents([
      { type: "itemStarted", itemIndex: 0, item: message("", "streaming", "lost") },
      { type: "itemDelta", itemIndex: 0, itemId: "lost", delta: "partial" },
      { type: "itemStarted", itemIndex: 1, item: message("", "streaming", "kept") },
      { type: "pendingInputAdded", item: item({ id: "queued", type: "userMessage", status: "pending" }), mode: "queue" },
      { type: "pendingInputAdded", item: item({ id: "taken", type: "userMessage", status: "pending" }), mode: "queue" },
    ]);
    const ops = timeline.applySubscription(
      subscribed({
        streamingItems: [{ itemIndex: 1, item: message("more text", "streaming", "kept") }],
        pendingInputs: [{ item: item({ id: "queued", type: "userMessage", status: "pending" }), mode: "queue" }],
      }),
    );
    assert.ok(ops.some((op) => op.op === "removed" && op.itemId === "lost"));
    assert.ok(ops.some((op) => op.op === "streaming" && op.item.id === "kept"), "the kept item gets the runtime's content");
    assert.ok(ops.some((op) => op.op === "pendingRemoved" && op.itemId === "taken"));
    const snapshot = timeline.snapshot();
    assert.deepEqual(snapshot.streaming.map((s) => [s.item.id, s.item.content?.[0]?.text]), [["kept", "more text"]]);
    assert.deepEqual(snapshot.pending.map((p) => p.item.id), ["queued"]);
  });

  it("opens an approval prompt from approvalRequested, marks the call, and closes it with who decided", () => {
    const timeline = new SessionTimeline("sess_1");
    const call = item({ id: "call_1", type: "toolCall", status: "streaming", toolCall: { callId: "c1", name: "shell", arguments: '{"command": "rm x"}' } });
    timeline.applyEvents([{ type: "itemStarted", itemIndex: 0, item: call }]);
    const approval = { tool: "shell", arguments: { command: "rm x" }, command: "rm x", reason: "the agent's rule for shell: ask" };
    const opened = timeline.applyEvents([{ type: "approvalRequested", itemId: "call_1", sessionId: "sess_1", approval }]);
    assert.deepEqual(opened.map((op) => op.op), ["approval", "streaming"]);
    assert.equal(timeline.item("call_1")?.status, "awaitingApproval", "the call shows that it waits");
    assert.deepEqual(timeline.snapshot().approvals, [{ itemId: "call_1", sessionId: "sess_1", approval }]);

    const by = { kind: "client" as const, name: "Neovim", clientId: "nvim-1" };
    const closed = timeline.applyEvents([{ type: "approvalResolved", itemId: "call_1", sessionId: "sess_1", decision: "deny", by }]);
    const outcome = { itemId: "call_1", sessionId: "sess_1", decision: "deny", by };
    assert.deepEqual(closed[0], { op: "approvalClosed", itemId: "call_1", outcome });
    assert.equal(timeline.item("call_1")?.status, "streaming");
    const snapshot = timeline.snapshot();
    assert.deepEqual(snapshot.approvals, []);
    assert.deepEqual(snapshot.outcomes, [outcome], "who decided stays for a view that reloads");
  });

  it("takes the prompts of a snapshot from pendingApprovals, with the runtime's reason, and closes prompts that are over", () => {
    const timeline = new SessionTimeline("sess_1");
    const waiting = item({
      id: "call_2",
      type: "toolCall",
      status: "awaitingApproval",
      toolCall: { callId: "c2", name: "shell", arguments: '{"command": "make test", "workdir": "sub"}' },
    });
    const request = { tool: "shell", arguments: { command: "make test", workdir: "sub" }, reason: "the agent's rule for shell: ask", command: "make test", paths: ["sub"] };
    const resynced = timeline.applySubscription(
      subscribed({ streamingItems: [{ itemIndex: 0, item: waiting }], pendingApprovals: [{ itemId: "call_2", sessionId: "sess_1", approval: request }] }),
    );
    const approval = resynced.find((op) => op.op === "approval");
    assert.ok(approval && approval.op === "approval");
    assert.deepEqual(approval.approval, { itemId: "call_2", sessionId: "sess_1", approval: request }, "not rebuilt from the arguments: the reason is there");
    assert.equal(timeline.item("call_2")?.status, "awaitingApproval");
    // the same snapshot again (a resync): the prompt stays, no second op
    assert.ok(!timeline.applySubscription(subscribed({ streamingItems: [{ itemIndex: 0, item: waiting }], pendingApprovals: [{ itemId: "call_2", sessionId: "sess_1", approval: request }] })).some((op) => op.op === "approval"));

    // the runtime restarted: the call no longer waits, so the prompt goes
    const after = timeline.applySubscription(subscribed());
    assert.ok(after.some((op) => op.op === "approvalClosed" && op.itemId === "call_2" && op.outcome === undefined));
    assert.deepEqual(timeline.snapshot().approvals, []);
  });

  it("from a server without pendingApprovals, rebuilds the prompt of a call awaiting approval from the item", () => {
    const timeline = new SessionTimeline("sess_1");
    const waiting = item({
      id: "call_4",
      type: "toolCall",
      status: "awaitingApproval",
      toolCall: { callId: "c4", name: "shell", arguments: '{"command": "make test", "workdir": "sub"}' },
    });
    const older = { subscriptionId: "sub_1", lastSavedOrdinal: 0, pendingInputs: [], streamingItems: [{ itemIndex: 0, item: waiting }] };
    const resynced = timeline.applySubscription(older as unknown as SubscribeSessionResult);
    const approval = resynced.find((op) => op.op === "approval");
    assert.ok(approval && approval.op === "approval");
    assert.deepEqual(approval.approval, {
      itemId: "call_4",
      sessionId: "sess_1",
      approval: { tool: "shell", arguments: { command: "make test", workdir: "sub" }, command: "make test", paths: ["sub"] },
    });
    const edit = item({ id: "call_3", type: "toolCall", status: "awaitingApproval", toolCall: { callId: "c3", name: "edit", arguments: '{"path": "a.txt"}' } });
    assert.deepEqual(approvalFromItem(edit), { tool: "edit", arguments: { path: "a.txt" }, paths: ["a.txt"] });
  });

  it("holds a sub-agent's prompt heard on the parent session, with the sub-agent's sessionId, until it is answered or gone", () => {
    const parent = new SessionTimeline("sess_main");
    const request = { tool: "shell", arguments: { command: "touch x" }, reason: "the agent's rule for shell: ask", command: "touch x" };
    const opened = parent.applyEvents([{ type: "approvalRequested", itemId: "call_sub", sessionId: "sess_sub", approval: request }]);
    assert.deepEqual(opened, [{ op: "approval", approval: { itemId: "call_sub", sessionId: "sess_sub", approval: request } }], "no call of this session changes");
    // a resync of the parent: the runtime lists what waits below it too
    const kept = parent.applySubscription(subscribed({ pendingApprovals: [{ itemId: "call_sub", sessionId: "sess_sub", approval: request }] }));
    assert.ok(!kept.some((op) => op.op === "approvalClosed"), "the sub-agent's prompt stays although no item of the parent waits");
    assert.deepEqual(parent.snapshot().approvals.map((a) => [a.itemId, a.sessionId]), [["call_sub", "sess_sub"]]);
    const by = { kind: "client" as const, name: "VS Code", clientId: "vscode-1" };
    const closed = parent.applyEvents([{ type: "approvalResolved", itemId: "call_sub", sessionId: "sess_sub", decision: "allowOnce", by }]);
    assert.deepEqual(closed, [{ op: "approvalClosed", itemId: "call_sub", outcome: { itemId: "call_sub", sessionId: "sess_sub", decision: "allowOnce", by } }]);
    assert.deepEqual(parent.snapshot().approvals, []);
  });

  it("tracks state, the running turn, context and usage", () => {
    const timeline = new SessionTimeline("sess_1");
    const turn = { id: "turn_1", conversationId: "conv_1", sessionId: "sess_1", status: "running" as const, startedAt: "", usage: { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0, totalTokens: 0 } };
    timeline.applyEvents([
      { type: "turnStarted", turn },
      { type: "stateChanged", state: "running" },
      { type: "contextUsageUpdated", context: { source: "actual", tokens: 150, window: 8000 } },
    ]);
    assert.equal(timeline.state.activeTurnId, "turn_1");
    assert.equal(timeline.state.state, "running");
    assert.deepEqual(timeline.state.context, { source: "actual", tokens: 150, window: 8000 });
    timeline.applyEvents([{ type: "turnCompleted", turn: { ...turn, status: "completed" } }, { type: "stateChanged", state: "idle" }]);
    assert.equal(timeline.state.activeTurnId, undefined);
    assert.equal(timeline.state.lastTurn?.status, "completed");
  });

  it("ignores event types it does not know", () => {
    const timeline = new SessionTimeline("sess_1");
    const ops = timeline.applyEvents([{ type: "somethingNew", value: 1 } as never]);
    assert.deepEqual(ops, []);
  });

  it("loads earlier pages before the oldest item", () => {
    const timeline = new SessionTimeline("sess_1");
    const [a, b, c] = [message("a"), message("b"), message("c")];
    timeline.loadLatest([{ ordinal: 9, item: c }], true);
    assert.equal(timeline.oldestOrdinal, 9);
    const ops = timeline.loadEarlier([{ ordinal: 7, item: b }, { ordinal: 2, item: a }, { ordinal: 9, item: c }], false);
    assert.deepEqual(ops, [{ op: "earlier", items: [{ ordinal: 2, item: a }, { ordinal: 7, item: b }], hasEarlier: false }]);
    assert.equal(timeline.hasEarlier, false);
    assert.equal(timeline.lastOrdinal, 9);
  });
});
