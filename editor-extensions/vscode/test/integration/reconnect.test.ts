// Recovery: the runtime host killed with SIGKILL mid-turn (the front starts a new one, answers
// requests in flight with runtimeStopped, closes subscriptions and gives the new host the editor's
// last setDefinitions), and an editor too slow to read
// (subscriberTooSlow). Afterwards the screen must equal the server's log: nothing lost, nothing twice.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ASKS_FOR_SHELL, harness } from "../support/harness";
import type { Screen } from "../support/screen";
import { textOf } from "../support/screen";

const text = (value: string) => [{ type: "text" as const, text: value }];

/** A process that runs (a zombie waiting for its parent to reap it does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The screen shows exactly the server's items, each once, in order. */
async function assertScreenMatchesServer(screen: Screen, list: () => Promise<string[]>): Promise<void> {
  const onScreen = screen.saved().map((item) => item.id);
  assert.equal(new Set(onScreen).size, onScreen.length, "an item is on screen twice");
  assert.deepEqual(onScreen, await list());
}

describe("recovery after a runtime restart", { timeout: 90_000 }, () => {
  it("re-subscribes and re-lists after the runtime host is killed mid-turn", async (t) => {
    const h = await harness(t);
    const client = h.runtime.client;
    await h.model.enqueue([["text", "streaming..."], ["pause", 60]]);
    const { open, screen } = await h.conversation();
    const list = async () =>
      (await client.rpc.request("openvaala/listItems", { conversationId: open.id, limit: 500 })).items.map((l) => l.item.id);
    const asked = await open.submit(text("question"));
    await screen.until(() => screen.streaming().some((item) => textOf(item) === "streaming..."), "the answer to stream");
    const queued = await open.submit(text("follow-up"));
    await screen.until(() => screen.pending.has(queued), "the follow-up to queue");

    let restarts = 0;
    client.onRuntimeRestart(() => restarts++);
    const states: string[] = [];
    open.onSyncState(({ state }) => states.push(state.state));
    // a request in flight when the host dies is answered runtimeStopped
    const inFlight = client.rpc.request("openvaala/query", { sql: "SELECT count(*) FROM range(20000000000)" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const oldHost = h.runtime.hostPid();
    process.kill(oldHost, "SIGKILL");
    await assert.rejects(inFlight, (error: { kind?: string; code?: number }) => error.kind === "runtimeStopped" && error.code === -32014);
    assert.ok(restarts >= 1, "the client noticed the restart");

    // the session subscription closed runtimeStopped, was renewed, and caught up
    await screen.until(() => states.includes("resyncing") && open.mainSession?.subscription.syncState.state === "live", "the session to resync");
    assert.notEqual(h.runtime.hostPid(), oldHost);
    assert.equal(alive(oldHost), false);
    await screen.until(() => screen.streaming().length === 0, "the cut stream to leave the screen");
    await assertScreenMatchesServer(screen, list);
    assert.equal(screen.saved()[0]?.id, asked);
    assert.deepEqual([...screen.pending.keys()], [queued], "the queued input survived the restart");
    const turns = await client.rpc.request("openvaala/listTurns", { conversationId: open.id });
    assert.deepEqual(turns.items.map((turn) => turn.status), ["interrupted"]);

    // the conversation works on: a new input runs with the queued one
    await h.model.setDefault([["text", "answered"]]);
    await open.submit(text("and now?"));
    await screen.until(
      () => screen.saved().some((item) => textOf(item) === "answered") && screen.status.state === "idle",
      "the next turn after the restart",
    );
    await assertScreenMatchesServer(screen, list);
    const texts = screen.saved().map(textOf);
    assert.deepEqual(texts.slice(-3), ["follow-up", "and now?", "answered"]);
    assert.equal(screen.pending.size, 0);
  });

  it("takes down an approval prompt whose call died with the runtime, keeps the definitions, and asks again in the new one", async (t) => {
    const h = await harness(t);
    await h.define([ASKS_FOR_SHELL]);
    const client = h.runtime.client;
    await h.model.enqueue([["tool_call", "c1", "shell", ['{"command": "echo first"}']], ["finish"]]);
    const { open, screen } = await h.conversation();
    await open.submit(text("run it"));
    const before = await screen.until(() => [...screen.approvals.values()][0], "the approval prompt");
    const oldHost = h.runtime.hostPid();
    process.kill(oldHost, "SIGKILL");
    // the subscription is renewed in the new runtime; the call died with the old one, so does its prompt
    await screen.until(() => h.runtime.hostPid() !== oldHost && screen.approvals.size === 0 && screen.streaming().length === 0, "the prompt to leave");
    assert.ok(screen.sawOp((op) => op.op === "approvalClosed" && op.itemId === before.itemId));
    await assertScreenMatchesServer(screen, async () =>
      (await client.rpc.request("openvaala/listItems", { conversationId: open.id, limit: 500 })).items.map((l) => l.item.id),
    );
    // the definitions this editor set before the kill survived it: the front gave them to the new
    // host (setDefinitions lives in the host's memory), so nothing is set again here
    const agents = await client.agents();
    assert.deepEqual(
      agents.map((agent) => [agent.name, agent.permissions]),
      [[ASKS_FOR_SHELL.name, ASKS_FOR_SHELL.permissions]],
      "listAgents shows the agent set before the kill, with its permissions",
    );
    assert.deepEqual(
      h.runtime.notifications.filter((n) => n.method === "window/logMessage" && /refused the editor's definitions/.test(JSON.stringify(n.params))),
      [],
      "the new host took them",
    );
    // and they rule: the shell asks again in the new runtime
    await h.model.enqueue([["tool_call", "c2", "shell", ['{"command": "echo second"}']], ["finish"]], [["text", "done"]]);
    await open.submit(text("again"));
    const after = await screen.until(() => [...screen.approvals.values()][0], "the prompt in the new runtime");
    assert.notEqual(after.itemId, before.itemId);
    await open.answerApproval(after.itemId, "allowOnce");
    await screen.until(() => screen.outcomes.get(after.itemId) && screen.status.state === "idle", "the turn after the answer");
    assert.ok(screen.saved().some((item) => item.type === "toolResult" && textOf(item).startsWith("second")));
  });

  it("catches up after subscriberTooSlow without losing or repeating deltas", async (t) => {
    const h = await harness(t, { openvaala: { maxBufferedEvents: 100 } });
    const client = h.runtime.client;
    const piece = "x".repeat(1000);
    await h.model.enqueue([["deltas", 1500, piece]]);
    const { open, screen } = await h.conversation();
    const states: string[] = [];
    open.onSyncState(({ state }) => states.push(state.state));
    await open.submit(text("stream a lot"));
    await screen.until(() => screen.status.state === "running", "the turn to start");
    // the editor stops reading its server's output, as a busy extension host would
    h.runtime.process.stdout?.pause();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    h.runtime.process.stdout?.resume();
    await screen.until(() => screen.status.state === "idle" && screen.saved().length === 2, "the turn to finish on screen", 40_000);
    assert.ok(states.includes("resyncing"), `the subscription was renewed (states: ${states.join(", ")})`);
    const answer = screen.saved()[1]!;
    assert.equal(textOf(answer).length, piece.length * 1500, "the answer is whole");
    assert.equal(screen.streaming().length, 0);
    const listed = await client.rpc.request("openvaala/listItems", { conversationId: open.id });
    assert.deepEqual(screen.saved().map((item) => item.id), listed.items.map((l) => l.item.id));
  });
});
