// A sub-agent's approvals against the real runtime: the sub-agent (whose shell asks) starts and asks
// within milliseconds, before an editor could subscribe to its session; the runtime sends the
// question to the subscribers of the sessions above it, with the sub-agent's `sessionId`. The
// extension's client shows it from the main session and answers it there; a window opened while it
// waits shows it from the snapshot's `pendingApprovals`, with the runtime's reason.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { SessionSubscription } from "../../src/client/sessionSubscription";
import type { Approval, ApprovalOutcome, TimelineOp } from "../../src/client/timeline";
import { LEAD_AND_HELPER, delegation, harness } from "../support/harness";
import { Screen, textOf } from "../support/screen";
import { waitFor } from "../support/wait";

const text = (value: string) => [{ type: "text" as const, text: value }];

describe("a sub-agent's approvals, from the main session", { timeout: 60_000 }, () => {
  it("reach a client that follows only the main session, with the sub-agent's sessionId, and are answered there", async (t) => {
    const h = await harness(t);
    await h.define(LEAD_AND_HELPER);
    await h.model.enqueue(...delegation("echo helper > from-helper.txt && cat from-helper.txt"));
    const client = h.runtime.client;
    const conversation = await client.createConversation({ agentName: "lead" });
    const { sessions } = await client.rpc.request("openvaala/subscribeConversation", { conversationId: conversation.id });
    const mainId = sessions[0]!.session.id;
    // the main session alone: nothing here subscribes to the sub-agent's session
    const reopen = async () => void (await client.rpc.request("openvaala/openConversation", { conversationId: conversation.id }));
    const main = new SessionSubscription(client.rpc, client.hub, conversation.id, mainId, reopen);
    t.after(() => main.dispose());
    const ops: TimelineOp[] = [];
    main.onOps((batch) => ops.push(...batch));
    await main.start();

    await client.rpc.request("openvaala/submitInput", { conversationId: conversation.id, content: text("delegate"), inputId: "in-1" });
    const asked = await waitFor(() => main.timeline.pendingApprovals()[0], "the sub-agent's approval on the main session");
    assert.notEqual(asked.sessionId, mainId, "the item waits in the sub-agent's session");
    const listed = await client.rpc.request("openvaala/listSessions", { conversationId: conversation.id });
    const helper = listed.items.find((session) => session.id === asked.sessionId);
    assert.equal(helper?.agentName, "helper");
    assert.equal(helper?.parentSessionId, mainId);
    assert.equal(asked.approval.tool, "shell");
    assert.equal(asked.approval.command, "echo helper > from-helper.txt && cat from-helper.txt");
    assert.match(asked.approval.reason ?? "", /shell/, "the runtime's reason");
    assert.ok(!existsSync(join(h.runtime.workspace, "from-helper.txt")), "nothing ran yet");

    await client.rpc.request("openvaala/answerApproval", { conversationId: conversation.id, itemId: asked.itemId, decision: "allowOnce" });
    const closed = await waitFor(
      () => ops.find((op): op is Extract<TimelineOp, { op: "approvalClosed" }> => op.op === "approvalClosed" && op.itemId === asked.itemId),
      "approvalResolved on the main session",
    );
    assert.deepEqual(closed.outcome, {
      itemId: asked.itemId,
      sessionId: asked.sessionId,
      decision: "allowOnce",
      by: { kind: "client", name: "VS Code", clientId: h.runtime.clientId },
    });
    await waitFor(() => main.timeline.state.lastTurn?.status === "completed", "the lead's turn to complete");
    assert.equal(readFileSync(join(h.runtime.workspace, "from-helper.txt"), "utf8"), "helper\n", "the sub-agent's command ran");
    assert.deepEqual(main.timeline.pendingApprovals(), []);
    const result = main.timeline.snapshot().items.find((logged) => logged.item.type === "toolResult");
    assert.match(textOf(result!.item), /made it/, "the sub-agent's answer is the lead's tool result");
  });

  it("shows in a window opened while the sub-agent waits, from pendingApprovals with the reason; answered there, closed everywhere", async (t) => {
    const h = await harness(t);
    await h.define(LEAD_AND_HELPER);
    await h.model.enqueue(...delegation("rm -rf build"));
    const { open, screen } = await h.conversation(h.runtime, { agentName: "lead" });
    await open.submit(text("delegate"));
    const mine = await screen.until(() => [...screen.approvals.values()][0], "the prompt in the first window");
    const mainId = open.mainSession!.session.id;
    assert.notEqual(mine.sessionId, mainId);
    // the first window follows the sub-agent's session too (it nests in the view): one prompt all the same
    await waitFor(() => open.session(mine.sessionId), "the sub-agent's session to be followed");
    assert.equal(open.session(mine.sessionId)?.session.agentName, "helper");
    assert.deepEqual(open.pendingApprovals(), [mine]);

    // a window opened now: no approvalRequested for it, the prompt comes from the snapshot
    const other = await h.secondEditor();
    const seen = await other.client.open(open.id);
    const late = new Screen(seen);
    const fromSnapshot: Approval | undefined = late.approvals.get(mine.itemId);
    assert.deepEqual(fromSnapshot, mine, "the runtime's own request, its reason included, with the sub-agent's sessionId");
    assert.match(fromSnapshot?.approval.reason ?? "", /shell/);
    await waitFor(() => seen.session(mine.sessionId), "the sub-agent's session in the second window");
    const childScreen = new Screen(seen, mine.sessionId);
    assert.equal(childScreen.streaming().find((item) => item.id === mine.itemId)?.status, "awaitingApproval");
    assert.deepEqual(seen.pendingApprovals(), [mine]);

    // answered from the second window's main conversation: every window closes it and says who
    await seen.answerApproval(mine.itemId, "deny", "not the build, please");
    const expected: ApprovalOutcome = {
      itemId: mine.itemId,
      sessionId: mine.sessionId,
      decision: "deny",
      by: { kind: "client", name: "VS Code", clientId: other.clientId },
    };
    for (const [name, s] of [["first", screen], ["second", late]] as const) {
      assert.deepEqual(await s.until(() => s.outcomes.get(mine.itemId), `approvalResolved in the ${name} window`), expected);
      assert.equal(s.approvals.size, 0, `the prompt closed in the ${name} window`);
    }
    await screen.turnCompleted();
    assert.deepEqual(open.pendingApprovals(), []);
    assert.deepEqual(seen.pendingApprovals(), []);
    const denied = await childScreen.until(() => childScreen.saved().find((item) => item.type === "toolResult"), "the sub-agent's tool result");
    assert.equal(denied.toolResult?.isError, true);
    assert.match(textOf(denied), /not the build, please/);
  });
});
