// The chat view's controller (everything behind the webview but the VS Code API) against the real
// runtime: what it posts to the view for the list, a conversation, a turn, a missing model; and the
// usage panel's query.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ChatController, type ChatUi, type ClientProvider } from "../../src/chat/controller";
import { Emitter } from "../../src/client/emitter";
import type { OpenvaalaClient } from "../../src/client/openvaalaClient";
import type { HostCommand, HostMessage } from "../../src/shared/messages";
import { USAGE_SQL, parseUsage, sinceDay } from "../../src/usage/usageData";
import { SKIP_INTEGRATION, harness } from "../support/harness";
import { waitFor } from "../support/wait";

class FakeUi implements ChatUi {
  readonly posts: HostMessage[] = [];
  readonly commands: HostCommand[] = [];
  confirmAnswer = true;
  inputAnswer: string | undefined = undefined;
  post(message: HostMessage): void {
    this.posts.push(message);
  }
  confirm(): Promise<boolean> {
    return Promise.resolve(this.confirmAnswer);
  }
  input(): Promise<string | undefined> {
    return Promise.resolve(this.inputAnswer);
  }
  pickAgent(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  runCommand(command: HostCommand): void {
    this.commands.push(command);
  }
  openLink(): void {}
  of<T extends HostMessage["type"]>(type: T): Extract<HostMessage, { type: T }>[] {
    return this.posts.filter((m): m is Extract<HostMessage, { type: T }> => m.type === type);
  }
}

function provider(client: OpenvaalaClient): ClientProvider {
  return {
    folders: () => [{ key: "file:///ws", name: "ws" }],
    client: () => Promise.resolve(client),
    status: () => ({ state: "ready", serverVersion: client.features.serverVersion, protocolVersion: client.features.protocolVersion }),
    onDidChangeStatus: new Emitter<{ folder: string; status: never }>().event,
    onDidRestart: new Emitter<{ folder: string; client: OpenvaalaClient }>().event,
  };
}

describe("the chat controller against the real runtime", { skip: SKIP_INTEGRATION, timeout: 60_000 }, () => {
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
  });

  it("reads tokens by day and model for the usage panel", async (t) => {
    const h = await harness(t);
    await h.model.enqueue([["text", "ok"], ["finish", { prompt_tokens: 120, completion_tokens: 30 }]]);
    const { open, screen } = await h.conversation();
    await open.submit([{ type: "text", text: "count me" }]);
    await screen.turnCompleted();
    const described = await h.runtime.client.query("DESCRIBE usage_by_model_day");
    const columns = described.rows.map((row) => row[0]);
    for (const column of ["day", "provider", "model", "calls", "input_tokens", "output_tokens", "total_tokens"]) {
      assert.ok(columns.includes(column), `usage_by_model_day has ${column}`);
    }
    const rows = parseUsage(await h.runtime.client.query(USAGE_SQL, [sinceDay(30)]));
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.provider, "fake");
    assert.equal(rows[0]?.model, "fake-model");
    assert.equal(rows[0]?.day, new Date().toISOString().slice(0, 10));
    assert.equal(rows[0]?.inputTokens, 120);
    assert.equal(rows[0]?.outputTokens, 30);
    assert.equal(rows[0]?.calls, 1);
  });
});
