// Two editors on one project: two `openvaala-lsp` fronts in their default mode (no --standalone)
// with the same OPENVAALA_HOME, so both relay to one shared runtime host, each driven by the
// extension's own client. What one does, the other sees live: a turn streaming, the running set,
// an approval prompt (also from a snapshot), and who answered it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ASKS_FOR_SHELL, harness } from "../support/harness";
import { Screen, textOf } from "../support/screen";
import { waitFor } from "../support/wait";

const text = (value: string) => [{ type: "text" as const, text: value }];

describe("two editors on one shared runtime host", { timeout: 60_000 }, () => {
  it("one submits, the other sees the turn stream and the conversation run", async (t) => {
    const h = await harness(t);
    const other = await h.secondEditor();
    assert.equal(other.hostPid(), h.runtime.hostPid(), "both fronts relay to one runtime host");
    assert.notEqual(other.clientId, h.runtime.clientId);

    await h.model.enqueue([["text", "Hel"], ["pause", 0.2], ["text", "lo "], ["pause", 0.2], ["text", "both."], ["pause", 0.3]]);
    const { open, screen } = await h.conversation();
    const listed = await other.client.listConversations({});
    assert.ok(listed.items.some((entry) => entry.conversation.id === open.id), "the second editor lists the new conversation");
    const seen = await other.client.open(open.id);
    const theirs = new Screen(seen);
    const running: string[][] = [];
    other.client.onRunning((ids) => running.push([...ids]));
    await other.client.watchRunning();

    await open.submit(text("hello from the first window"));
    // the second window sees the answer while it streams, then saved
    const partial = await theirs.until(
      () => theirs.streaming().find((item) => item.type === "assistantMessage" && textOf(item).length > 0),
      "the answer to stream in the second window",
    );
    assert.equal(partial.status, "streaming");
    await waitFor(() => running.some((ids) => ids.includes(open.id)), "the second window to see the conversation running");
    await screen.turnCompleted();
    await theirs.turnCompleted();
    assert.deepEqual(theirs.saved().map(textOf), ["hello from the first window", "Hello both."]);
    assert.deepEqual(theirs.saved().map((item) => item.id), screen.saved().map((item) => item.id));
    assert.ok((theirs.deltas.get(partial.id) ?? []).length >= 2, "deltas reached the second window as they came");
    await waitFor(() => running.at(-1)?.includes(open.id) === false, "the running set to empty again");
  });

  it("an approval asked is seen in both, answered in one, and closed in both with who answered", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    const other = await h.secondEditor();
    await h.model.enqueue([["tool_call", "c1", "shell", ['{"command": "echo from both"}']], ["finish"]], [["text", "ran"]]);
    const { open, screen } = await h.conversation();
    const othersView = await other.client.open(open.id);
    const early = new Screen(othersView);

    await open.submit(text("run it"));
    const mine = await screen.until(() => [...screen.approvals.values()][0], "the prompt in the first window");
    const theirs = await early.until(() => [...early.approvals.values()][0], "the prompt in the second window");
    assert.equal(theirs.itemId, mine.itemId);
    assert.deepEqual(theirs.approval, mine.approval, "both got approvalRequested");

    // a window opened while the call waits shows the prompt from the subscribeSession snapshot's
    // pendingApprovals: the runtime's own request, its reason included (not rebuilt from the item)
    const third = await h.secondEditor();
    const late = new Screen(await third.client.open(open.id));
    const fromSnapshot = late.approvals.get(mine.itemId);
    assert.ok(fromSnapshot, "the snapshot's pendingApprovals open the prompt");
    assert.deepEqual(fromSnapshot, mine);
    assert.match(fromSnapshot.approval.reason ?? "", /shell/);
    assert.equal(late.streaming().find((item) => item.id === mine.itemId)?.status, "awaitingApproval");

    // the second window answers; every window closes the prompt and names it
    await othersView.answerApproval(mine.itemId, "allowOnce");
    const expected = { itemId: mine.itemId, sessionId: mine.sessionId, decision: "allowOnce", by: { kind: "client", name: "VS Code", clientId: other.clientId } };
    for (const [name, s] of [["first", screen], ["second", early], ["third", late]] as const) {
      assert.deepEqual(await s.until(() => s.outcomes.get(mine.itemId), `approvalResolved in the ${name} window`), expected);
      assert.equal(s.approvals.size, 0, `the prompt closed in the ${name} window`);
    }
    // the first window answers too late: invalidState, which the view shows quietly
    await assert.rejects(open.answerApproval(mine.itemId, "deny"), (error: { kind?: string }) => error.kind === "invalidState");
    await screen.turnCompleted();
    await early.turnCompleted();
    assert.match(textOf(screen.saved().find((item) => item.type === "toolResult")!), /^from both\n/);
    assert.deepEqual(early.saved().map((item) => item.id), screen.saved().map((item) => item.id));
  });
});
