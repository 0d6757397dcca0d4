// The extension's protocol client against the real openvaala-lsp and the scripted fake model:
// create, stream, tool calls, queue/withdraw, steer, interrupt, images, fork and compaction.
// (Approvals: approvals.test.ts; two editors on one runtime: sharedHost.test.ts.)
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { presentTool } from "../../src/shared/tools";
import { harness, requireAdvertised } from "../support/harness";
import { Screen, textOf } from "../support/screen";

const text = (value: string) => [{ type: "text" as const, text: value }];

describe("turns against the real runtime", { timeout: 240_000 }, () => {
  it("creates a conversation whose main session is followed from the start", async (t) => {
    const h = await harness(t);
    const conversation = await h.runtime.client.createConversation();
    assert.match(conversation.id, /^conv_/);
    const open = await h.runtime.client.open(conversation.id);
    const main = open.mainSession;
    assert.ok(main, "a conversation is created with its main session");
    assert.equal(main.session.parentSessionId, undefined);
    assert.equal(main.subscription.syncState.state, "live");
    assert.deepEqual(main.subscription.timeline.snapshot().items, []);
    const listed = await h.runtime.client.listConversations({});
    assert.ok(listed.items.some((entry) => entry.conversation.id === conversation.id));
  });

  it("streams deltas, then the saved item replaces the streamed one", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([
      ["reasoning", "Thinking ", "about it."],
      ["pause", 0.1],
      ["text", "Hel"],
      ["pause", 0.1],
      ["text", "lo, "],
      ["pause", 0.1],
      ["text", "world."],
      ["finish", { prompt_tokens: 40, completion_tokens: 8 }],
    ]);
    const { open, screen } = await h.conversation();
    const inputId = await open.submit(text("say hello"));
    // mid-stream: the answer is on screen, streaming, before it is saved
    const partial = await screen.until(
      () => screen.streaming().find((item) => item.type === "assistantMessage" && textOf(item).length > 0),
      "the answer to stream",
    );
    assert.equal(partial.status, "streaming");
    const turn = await screen.turnCompleted();
    assert.equal(turn.status, "completed");

    const answer = screen.saved().find((item) => item.type === "assistantMessage");
    assert.ok(answer);
    assert.equal(textOf(answer), "Hello, world.");
    assert.equal(answer.status, "completed");
    assert.ok((screen.deltas.get(answer.id) ?? []).length >= 2, "the answer arrived in several deltas");
    assert.equal((screen.deltas.get(answer.id) ?? []).join(""), "Hello, world.");
    assert.equal(screen.streaming().length, 0, "no streamed copy is left beside the saved item");
    assert.equal(screen.rows.filter((row) => row.item.id === answer.id).length, 1);
    const reasoning = screen.saved().find((item) => item.type === "reasoning");
    assert.equal(reasoning && textOf(reasoning), "Thinking about it.");

    // the screen equals the server's log, in order, each item once
    const listed = await h.runtime.client.rpc.request("openvaala/listItems", { conversationId: open.id, limit: 500 });
    assert.deepEqual(screen.saved().map((item) => item.id), listed.items.map((logged) => logged.item.id));
    assert.equal(screen.saved()[0]?.id, inputId);
    assert.equal(screen.status.state, "idle");
    assert.ok(screen.status.context && screen.status.context.window === 8000);
  });

  it("shows a shell tool call with its arguments and output", async (t) => {
    const h = await harness(t);
    await h.model.enqueue(
      [["tool_call", "call_1", "shell", ['{"command":', ' "echo hi"}']], ["finish"]],
      [["text", "It printed hi."]],
    );
    const { open, screen } = await h.conversation();
    await open.submit(text("run echo hi"));
    await screen.turnCompleted();
    const call = screen.saved().find((item) => item.type === "toolCall");
    const result = screen.saved().find((item) => item.type === "toolResult");
    assert.ok(call?.toolCall && result?.toolResult);
    assert.equal(call.toolCall.name, "shell");
    assert.deepEqual(presentTool(call.toolCall.name, call.toolCall.arguments), {
      kind: "shell",
      summary: "echo hi",
      command: "echo hi",
    });
    assert.equal(result.toolResult.callId, call.toolCall.callId);
    assert.equal(result.toolResult.isError, false);
    assert.match(textOf(result), /^hi\n/);
    // the arguments streamed into the call before it was saved
    assert.equal((screen.deltas.get(call.id) ?? []).join(""), '{"command": "echo hi"}');
  });

  it("queues input while a turn runs, and withdraws it", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([["text", "slow"], ["pause", 1.5], ["text", " answer"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("first"));
    await screen.until(() => screen.status.state === "running", "the turn to run");
    const queued = await open.submit(text("second, queued"));
    const pending = await screen.until(() => screen.pending.get(queued), "the queued input to show");
    assert.equal(pending.mode, "queue");
    const back = await open.withdraw(queued);
    assert.equal(back, "second, queued", "the withdrawn text goes back to the input box");
    await screen.until(() => !screen.pending.has(queued), "the withdrawn input to leave the queue");
    await screen.turnCompleted();
    assert.deepEqual(screen.saved().map(textOf), ["first", "slow answer"]);
    assert.equal((await h.model.requests()).length, 1, "the withdrawn input never ran");
  });

  it("steers a queued input into the running turn", async (t) => {
    const h = await harness(t);
    await h.model.enqueue(
      [["text", "working"], ["pause", 1.0], ["tool_call", "c1", "glob", ['{"pattern": "*"}']]],
      [["text", "steered"]],
    );
    const { open, screen } = await h.conversation();
    await open.submit(text("first"));
    await screen.until(() => screen.status.activeTurnId, "the turn to start");
    const queued = await open.submit(text("also do this"));
    await screen.until(() => screen.pending.get(queued), "the input to queue");
    await open.steer(queued);
    const turn = await screen.turnCompleted();
    assert.equal(turn.status, "completed");
    assert.equal(screen.turns.length, 1, "the steered input joined the running turn instead of starting one");
    const steered = screen.saved().find((item) => item.id === queued);
    assert.equal(steered?.turnId, turn.id);
    assert.equal(screen.pending.size, 0);
    const second = (await h.model.requests())[1]?.json.messages ?? [];
    assert.ok(JSON.stringify(second.at(-1)).includes("also do this"), "the model saw the steered input in its next call");
  });

  it("interrupts a streaming turn", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([["text", "partial ", "answer"], ["pause", 30], ["text", " never"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("go"));
    await screen.until(() => screen.streaming().some((item) => textOf(item) === "partial answer"), "the partial answer");
    const turnId = await open.interrupt();
    const turn = await screen.turnCompleted();
    assert.equal(turn.id, turnId);
    assert.equal(turn.status, "interrupted");
    const last = screen.saved().at(-1);
    assert.equal(last?.type, "assistantMessage");
    assert.equal(last?.status, "interrupted");
    assert.equal(textOf(last!), "partial answer");
    assert.equal(screen.streaming().length, 0);
    await assert.rejects(open.interrupt(), (error: { kind?: string }) => error.kind === "invalidState");
  });

  it("follows a sub-agent's session, nested under the session that started it", async (t) => {
    const h = await harness(t);
    await h.define([
      { name: "default", subAgents: ["reviewer"], titles: false },
      { name: "reviewer", description: "Reviews changes", titles: false },
    ]);
    await h.model.enqueue(
      [["tool_call", "c1", "subagent", ['{"agent": "reviewer", "task": "review the greeting"}']], ["finish"]],
      [["text", "The greeting is fine."]],
      [["text", "The reviewer says it is fine."]],
    );
    const { open, screen } = await h.conversation();
    const added = new Promise<string>((resolve) => open.onSessionAdded((entry) => resolve(entry.session.id)));
    await open.submit(text("get it reviewed"));
    const childId = await added;
    const child = open.session(childId);
    assert.ok(child);
    assert.equal(child.session.parentSessionId, open.mainSession?.session.id);
    assert.equal(child.session.agentName, "reviewer");
    const childScreen = new Screen(open, childId);
    await screen.turnCompleted();
    await childScreen.until(() => childScreen.saved().some((item) => item.type === "assistantMessage"), "the sub-agent's answer");
    assert.deepEqual(childScreen.saved().map(textOf), ["review the greeting", "The greeting is fine."]);
    assert.deepEqual(childScreen.saved()[0]?.from, { kind: "session", sessionId: open.mainSession?.session.id });
    const result = screen.saved().find((item) => item.type === "toolResult");
    assert.match(textOf(result!), /The greeting is fine\./, "the sub-agent's answer is the tool's result");
    assert.equal(screen.saved().at(-1)?.type, "assistantMessage");
  });

  it("sends images as image content", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([["text", "a pixel"]]);
    const { open, screen } = await h.conversation();
    // a 1x1 PNG
    const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    await open.submit([...text("what is this?"), { type: "image", mimeType: "image/png", data: pixel }]);
    await screen.turnCompleted();
    const input = screen.saved()[0];
    assert.deepEqual(input?.content?.[1], { type: "image", mimeType: "image/png", data: pixel });
  });

  it("renames, archives, searches and deletes conversations", async (t) => {
    const h = await harness(t);
    const client = h.runtime.client;
    const { open } = await h.conversation();
    await open.setTitle("Refactor the parser");
    const other = await client.createConversation();
    await client.setTitle(other.id, "Write docs");
    const found = await client.listConversations({ query: "parser" });
    assert.deepEqual(found.items.map((entry) => entry.conversation.id), [open.id]);
    await open.setArchived(true);
    assert.equal(open.conversation.archived, true);
    const active = await client.listConversations({ archived: false });
    assert.ok(!active.items.some((entry) => entry.conversation.id === open.id));
    const archived = await client.listConversations({ archived: true });
    assert.ok(archived.items.some((entry) => entry.conversation.id === open.id));
    open.dispose();
    await client.deleteConversation(other.id);
    await assert.rejects(
      client.rpc.request("openvaala/getConversation", { conversationId: other.id }),
      (error: { kind?: string }) => error.kind === "conversationNotFound",
    );
  });

  it("lists models, switches a session's model and reads its context usage", async (t) => {
    const h = await harness(t);
    const client = h.runtime.client;
    const models = await client.models();
    assert.deepEqual(models.models.map((m) => m.ref), [{ provider: "fake", name: "fake-model" }]);
    assert.deepEqual((await client.agents()).map((a) => a.name), ["default"]);
    const { open } = await h.conversation();
    const main = open.mainSession!;
    const session = await open.setModel(main.session.id, { provider: "fake", name: "fake-model" });
    assert.deepEqual(session.model.model, { provider: "fake", name: "fake-model" });
    const usage = await open.contextUsage(main.session.id);
    assert.equal(usage.window, 8000);
    assert.ok(usage.thresholdTokens > 0 && usage.thresholdTokens <= 8000);
  });

  it("forks a conversation after any turn", async (t) => {
    const h = await harness(t);
    requireAdvertised(h, "openvaala/forkConversation");
    await h.model.enqueue([["text", "one"]], [["text", "two"]], [["text", "three"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("first"));
    const first = await screen.turnCompleted(1);
    await open.submit(text("second"));
    const second = await screen.turnCompleted(2);
    // after the first turn: only its items come along
    const fork = await open.fork(first.id);
    assert.notEqual(fork.id, open.id);
    assert.deepEqual(fork.forkedFrom, { conversationId: open.id, turnId: first.id });
    const forked = await h.runtime.client.open(fork.id);
    const items = forked.mainSession!.subscription.timeline.snapshot().items.map((logged) => textOf(logged.item));
    assert.deepEqual(items, ["first", "one"]);
    // after the last turn: everything, and the fork goes on by itself
    const whole = await h.runtime.client.open((await open.fork(second.id)).id);
    const wholeScreen = new Screen(whole);
    assert.deepEqual(wholeScreen.saved().map(textOf), ["first", "one", "second", "two"]);
    await whole.submit(text("third"));
    await wholeScreen.turnCompleted(1);
    assert.deepEqual(wholeScreen.saved().map(textOf).slice(-2), ["third", "three"]);
    assert.deepEqual(screen.saved().map(textOf), ["first", "one", "second", "two"], "the source is untouched");
  });

  it("compacts the context on request", async (t) => {
    const h = await harness(t);
    requireAdvertised(h, "openvaala/compactContext");
    await h.model.enqueue([["text", "an answer"], ["finish", { prompt_tokens: 3000, completion_tokens: 20 }]]);
    await h.model.setDefault([["text", "A summary of the conversation."]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("hello"));
    await screen.turnCompleted();
    const turnId = await open.compact();
    await screen.until(
      () => screen.sawOp((op) => op.op === "compaction" && op.phase === "completed" && op.turnId === turnId),
      "compactionCompleted",
    );
    assert.ok(screen.sawOp((op) => op.op === "compaction" && op.phase === "started" && op.turnId === turnId));
    const compaction = screen.saved().find((item) => item.type === "compaction");
    assert.ok(compaction?.compaction, "the compaction item is on screen");
    assert.equal(compaction.compaction.trigger, "manual");
    const done = screen.ops.find((op) => op.op === "compaction" && op.phase === "completed");
    assert.ok(done && done.op === "compaction" && done.before && done.after);
    assert.equal(done.after.source, "estimated");
    assert.ok(done.after.tokens < done.before.tokens, "the context got smaller");
    assert.deepEqual(screen.status.context, done.after, "the meter shows the context after compaction");
    // while a turn runs, compaction is refused
    await h.model.enqueue([["text", "slow"], ["pause", 1.5]]);
    await open.submit(text("again"));
    await screen.until(() => screen.status.state === "running", "the next turn");
    await assert.rejects(open.compact(), (error: { kind?: string }) => error.kind === "invalidState");
    await screen.turnCompleted(3);
  });
});
