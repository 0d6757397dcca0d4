// Subscription routing and recovery, deterministic, over an in-memory connection: early
// notifications, seq gaps, duplicates, and subscriptions closed by a restarted runtime.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { OpenvaalaClient } from "../../src/client/openvaalaClient";
import type { Item, ListItemsParams, LoggedItem } from "../../src/protocol/generated";
import { FakeConnection, failure } from "../support/fakeConnection";
import { waitFor } from "../support/wait";

const INIT = { capabilities: { experimental: { openvaala: { protocolVersion: "0.3", serverVersion: "test", methods: ["openvaala/steerInput"], notifications: [] } } } };
const FAST = { retry: { attempts: 5, firstDelayMs: 1, maxDelayMs: 5 } };

function item(id: string, text: string): Item {
  return { id, conversationId: "conv_1", sessionId: "sess_1", type: "assistantMessage", status: "completed", createdAt: "", content: [{ type: "text", text }] };
}

const SESSION = { id: "sess_1", conversationId: "conv_1", agentName: "default", createdAt: "", model: {} };
const INFO = {
  session: SESSION,
  state: "idle",
  context: { source: "unknown", tokens: 0, window: 0 },
  usage: { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0, totalTokens: 0 },
};

/** A server with one conversation whose log the test appends to. */
function server() {
  const log: LoggedItem[] = [];
  let subscriptions = 0;
  let open = true;
  const connection = new FakeConnection()
    .handle("openvaala/openConversation", () => {
      open = true;
      return { id: "conv_1", title: "", agentName: "default", archived: false, ephemeral: false, createdAt: "", updatedAt: "", executorSettings: {} };
    })
    .handle("openvaala/subscribeConversation", () => ({ subscriptionId: "conv_sub", title: "", sessions: [INFO] }))
    .handle("openvaala/subscribeSession", () => {
      if (!open) throw failure("conversationNotOpen", -32011);
      subscriptions++;
      return { subscriptionId: `sub_${subscriptions}`, lastSavedOrdinal: log.length, pendingInputs: [], streamingItems: [] };
    })
    .handle("openvaala/listItems", (params: ListItemsParams) => {
      const after = params.cursor ?? 0;
      const items = params.order === "desc" ? [...log].reverse() : log.filter((l) => l.ordinal > after);
      return { items };
    })
    .handle("openvaala/unsubscribe", () => ({}));
  return {
    connection,
    log,
    close: () => {
      open = false;
    },
    get subscriptions() {
      return subscriptions;
    },
  };
}

function saved(ordinal: number, id: string, text: string) {
  return { type: "itemCompleted", ordinal, item: item(id, text) };
}

describe("subscriptions", () => {
  it("delivers notifications that arrive before the subscription is known", async () => {
    const s = server();
    s.log.push({ ordinal: 1, item: item("a", "one") });
    // the first session event arrives before the subscribeSession answer is read
    s.connection.handle("openvaala/subscribeSession", () => {
      s.connection.notify("openvaala/sessionEvent", { subscriptionId: "early", seq: 1, events: [saved(2, "b", "two")] });
      return { subscriptionId: "early", lastSavedOrdinal: 1, pendingInputs: [], streamingItems: [] };
    });
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const timeline = open.mainSession!.subscription.timeline;
    assert.deepEqual(timeline.snapshot().items.map((l) => l.item.id), ["a", "b"]);
    client.dispose();
  });

  it("completes a snapshot that comes in pages before it applies the events that came meanwhile", async () => {
    const s = server();
    const queued = (id: string) => ({ item: item(id, id), mode: "queue" });
    let pages = 0;
    s.connection
      .handle("openvaala/subscribeSession", () => ({
        subscriptionId: "paged",
        lastSavedOrdinal: 0,
        pendingApprovals: [],
        pendingInputs: [queued("in_1")],
        streamingItems: [],
        snapshotCursor: "page_2",
      }))
      .handle("openvaala/getSessionSnapshot", (params: { subscriptionId: string; cursor: string }) => {
        assert.equal(params.subscriptionId, "paged");
        pages++;
        if (params.cursor === "page_2") {
          // an event after the snapshot arrives while its pages are fetched: it applies after them
          s.connection.notify("openvaala/sessionEvent", {
            subscriptionId: "paged",
            seq: 1,
            events: [{ type: "pendingInputRemoved", itemId: "in_2", reason: "withdrawn" }],
          });
          return { pendingApprovals: [], pendingInputs: [queued("in_2")], streamingItems: [], snapshotCursor: "page_3" };
        }
        return { pendingApprovals: [], pendingInputs: [queued("in_3")], streamingItems: [] };
      });
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const timeline = open.mainSession!.subscription.timeline;
    assert.equal(pages, 2);
    assert.deepEqual(timeline.snapshot().pending.map((p) => p.item.id), ["in_1", "in_3"]);
    client.dispose();
  });

  it("ignores a repeated notification and resyncs on a seq gap, listing after the last ordinal", async () => {
    const s = server();
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const subscription = open.mainSession!.subscription;
    s.log.push({ ordinal: 1, item: item("a", "one") });
    s.connection.notify("openvaala/sessionEvent", { subscriptionId: "sub_1", seq: 1, events: [saved(1, "a", "one")] });
    s.connection.notify("openvaala/sessionEvent", { subscriptionId: "sub_1", seq: 1, events: [saved(1, "a", "one")] });
    assert.equal(subscription.timeline.snapshot().items.length, 1);

    // seq 2 and 3 are lost; 4 arrives: the client must not trust its state
    s.log.push({ ordinal: 2, item: item("b", "two") }, { ordinal: 3, item: item("c", "three") });
    s.connection.notify("openvaala/sessionEvent", { subscriptionId: "sub_1", seq: 4, events: [saved(3, "c", "three")] });
    await waitFor(() => s.subscriptions === 2 && subscription.syncState.state === "live", "the resync");
    assert.deepEqual(subscription.timeline.snapshot().items.map((l) => l.item.id), ["a", "b", "c"]);
    const catchUp = s.connection.callsOf("openvaala/listItems").at(-1) as ListItemsParams;
    assert.equal(catchUp.cursor, 1, "it listed after the last ordinal it had");
    assert.equal(catchUp.order, "asc");
    assert.deepEqual(s.connection.callsOf("openvaala/unsubscribe"), [{ subscriptionId: "sub_1" }]);
    client.dispose();
  });

  it("opens the conversation again when a restarted runtime closed the subscription", async () => {
    const s = server();
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const subscription = open.mainSession!.subscription;
    s.close(); // a new runtime holds nothing open
    s.log.push({ ordinal: 1, item: item("a", "saved before the crash") });
    s.connection.notify("openvaala/subscriptionClosed", { subscriptionId: "sub_1", reason: { kind: "runtimeStopped", message: "host died" } });
    await waitFor(() => s.subscriptions === 2 && subscription.syncState.state === "live", "the resync");
    assert.equal(s.connection.callsOf("openvaala/openConversation").length, 2, "the conversation was opened again");
    assert.deepEqual(subscription.timeline.snapshot().items.map((l) => l.item.id), ["a"]);
    client.dispose();
  });

  it("stops following when the subscription closes for good", async () => {
    const s = server();
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const subscription = open.mainSession!.subscription;
    s.connection.notify("openvaala/subscriptionClosed", { subscriptionId: "sub_1", reason: { kind: "conversationNotFound", message: "deleted" } });
    assert.deepEqual(subscription.syncState, { state: "closed", reason: { kind: "conversationNotFound", message: "deleted" } });
    assert.equal(s.subscriptions, 1);
    client.dispose();
  });

  it("retries a submit across a restart with the same input id", async () => {
    const s = server();
    let attempts = 0;
    s.connection.handle("openvaala/submitInput", () => {
      attempts++;
      if (attempts === 1) throw failure("runtimeStopped", -32014);
      return { itemId: "item_1" };
    });
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    let restarts = 0;
    client.onRuntimeRestart(() => restarts++);
    const open = await client.open("conv_1");
    assert.equal(await open.submit([{ type: "text", text: "hi" }]), "item_1");
    const [first, second] = s.connection.callsOf("openvaala/submitInput") as { inputId: string }[];
    assert.ok(first && second);
    assert.equal(first.inputId, second.inputId, "the retry is idempotent");
    assert.equal(restarts, 1);
    client.dispose();
  });
});

describe("sub-agent sessions", () => {
  it("follows a session added to the conversation, nested under its parent", async () => {
    const s = server();
    const client = new OpenvaalaClient(s.connection, INIT, FAST);
    const open = await client.open("conv_1");
    const added: string[] = [];
    open.onSessionAdded((entry) => added.push(`${entry.session.id}<${entry.session.parentSessionId ?? ""}`));
    const child = { ...SESSION, id: "sess_2", agentName: "reviewer", parentSessionId: "sess_1" };
    s.connection.notify("openvaala/conversationEvent", { subscriptionId: "conv_sub", seq: 1, event: { type: "sessionAdded", session: child } });
    await waitFor(() => open.session("sess_2")?.subscription.syncState.state === "live", "the sub-agent session to be followed");
    assert.deepEqual(added, ["sess_2<sess_1"]);
    assert.equal(open.mainSession?.session.id, "sess_1", "the main session stays the one without a parent");
    const subscribed = s.connection.callsOf("openvaala/subscribeSession") as { sessionId: string }[];
    assert.deepEqual(subscribed.map((p) => p.sessionId), ["sess_1", "sess_2"]);
    client.dispose();
  });
});
