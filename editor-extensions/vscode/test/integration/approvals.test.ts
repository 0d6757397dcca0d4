// Approvals against the real runtime: an agent whose shell asks (setDefinitions), a scripted shell
// call, and the extension's client showing the prompt and answering it — allow once, allow always
// (remembered in the conversation's `alwaysAllowed`), deny with a message for the model, a late or
// unknown answer, and an interrupt while a call waits. The runtime runs the shell in its sandbox.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ASKS_FOR_SHELL, harness, requireAdvertised } from "../support/harness";
import { textOf } from "../support/screen";

const text = (value: string) => [{ type: "text" as const, text: value }];
const shell = (callId: string, command: string) => [["tool_call", callId, "shell", [JSON.stringify({ command })]], ["finish"]];

describe("approvals against the real runtime", { timeout: 180_000 }, () => {
  it("shows the prompt of a shell call that asks, allows it once, and says who allowed it", async (t) => {
    const h = await harness(t);
    requireAdvertised(h, "openvaala/answerApproval");
    await h.define([ASKS_FOR_SHELL]);
    await h.model.enqueue(shell("c1", "echo approved > proof.txt && cat proof.txt"), [["text", "done"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("run it"));

    const approval = await screen.until(() => [...screen.approvals.values()][0], "the approval prompt");
    assert.equal(approval.sessionId, open.mainSession?.session.id, "the call waits in this session");
    assert.equal(approval.approval.tool, "shell");
    assert.equal(approval.approval.command, "echo approved > proof.txt && cat proof.txt");
    assert.deepEqual(approval.approval.arguments, { command: "echo approved > proof.txt && cat proof.txt" });
    assert.match(approval.approval.reason ?? "", /shell/);
    // the call waits on screen, marked so, and nothing ran yet
    const waiting = screen.streaming().find((item) => item.id === approval.itemId);
    assert.equal(waiting?.status, "awaitingApproval");
    assert.equal(screen.status.state, "running");
    assert.equal((await h.model.requests()).length, 1);

    await open.answerApproval(approval.itemId, "allowOnce");
    const outcome = await screen.until(() => screen.outcomes.get(approval.itemId), "approvalResolved");
    assert.equal(screen.approvals.size, 0, "the prompt closed");
    assert.deepEqual(outcome, {
      itemId: approval.itemId,
      sessionId: approval.sessionId,
      decision: "allowOnce",
      by: { kind: "client", name: "VS Code", clientId: h.runtime.clientId },
    });
    await screen.turnCompleted();
    const call = screen.saved().find((item) => item.id === approval.itemId);
    assert.equal(call?.status, "completed");
    const result = screen.saved().find((item) => item.type === "toolResult");
    assert.ok(result?.toolResult && !result.toolResult.isError);
    assert.match(textOf(result), /^approved\n/, "the command ran (in the sandbox, where the workspace is writable)");

    // the first answer won: a later one is invalidState, one for a call that never asked notFound
    await assert.rejects(open.answerApproval(approval.itemId, "deny"), (error: { kind?: string }) => error.kind === "invalidState");
    await assert.rejects(open.answerApproval(result.id, "allowOnce"), (error: { kind?: string }) => error.kind === "notFound");
    assert.deepEqual(open.conversation.alwaysAllowed, [], "allow once remembers nothing");
  });

  it("denies with a message that the model reads", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    await h.model.enqueue(shell("c1", "rm -rf build"), [["text", "I left the build alone."]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("clean up"));
    const approval = await screen.until(() => [...screen.approvals.values()][0], "the approval prompt");
    await open.answerApproval(approval.itemId, "deny", "keep the build, it took an hour");
    await screen.turnCompleted();
    assert.equal(screen.outcomes.get(approval.itemId)?.decision, "deny");
    const result = screen.saved().find((item) => item.type === "toolResult");
    assert.equal(result?.toolResult?.isError, true);
    assert.match(textOf(result!), /the user denied this call .*keep the build, it took an hour/);
    const second = JSON.stringify((await h.model.requests())[1]?.json.messages ?? []);
    assert.ok(second.includes("keep the build, it took an hour"), "the model's next call carries the user's words");
    assert.equal(screen.saved().at(-1)?.type, "assistantMessage");
  });

  it("allows always: the conversation remembers the command and does not ask again", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    await h.model.enqueue(shell("c1", "ls -la"), [["text", "listed"]], shell("c2", "ls -a"), [["text", "listed again"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("list"));
    const approval = await screen.until(() => [...screen.approvals.values()][0], "the approval prompt");
    const updated = new Promise((resolve) => open.onConversation(resolve));
    await open.answerApproval(approval.itemId, "allowAlways");
    await screen.turnCompleted(1);
    await updated;
    assert.deepEqual(open.conversation.alwaysAllowed, [{ tool: "shell", commandPrefix: "ls", outsideSandbox: false }]);

    await open.submit(text("list again"));
    await screen.turnCompleted(2);
    const asked = screen.ops.filter((op) => op.op === "approval").length;
    assert.equal(asked, 1, "the second ls ran without asking");
    const results = screen.saved().filter((item) => item.type === "toolResult");
    assert.equal(results.length, 2);
    assert.ok(results.every((item) => item.toolResult?.isError === false));
  });

  it("closes the prompt when the turn is interrupted: denied by the user", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    await h.model.enqueue(shell("c1", "sleep 1"));
    const { open, screen } = await h.conversation();
    await open.submit(text("wait"));
    const approval = await screen.until(() => [...screen.approvals.values()][0], "the approval prompt");
    await open.interrupt();
    const turn = await screen.turnCompleted();
    assert.equal(turn.status, "interrupted");
    assert.equal(screen.approvals.size, 0);
    assert.deepEqual(screen.outcomes.get(approval.itemId), { itemId: approval.itemId, sessionId: approval.sessionId, decision: "deny", by: { kind: "user" } });
    assert.equal(screen.streaming().length, 0);
  });
});
