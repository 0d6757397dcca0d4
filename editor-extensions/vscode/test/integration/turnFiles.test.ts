// A turn's changed files, their diffs, undo and redo, through the chat controller against the real
// runtime (its checkpoints in a shadow git repository) and real files: what the view is told
// (turnInfo under the turn, revertConflict in the runtime's words), what the diff editor is given
// (the before text rebuilt from the turn's diff on the file as it is now), and the files on disk.
// Also: the editor's context (an @-mentioned file, a selection) in the input the model reads.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { ChatController } from "../../src/chat/controller";
import type { TurnInfo } from "../../src/shared/messages";
import { FakeUi, provider } from "../support/fakeUi";
import { harness, requireAdvertised } from "../support/harness";
import { waitFor } from "../support/wait";

const call = (id: string, name: string, args: Record<string, unknown>) => [["tool_call", id, name, [JSON.stringify(args)]], ["finish"]];

/** The view's idea of each turn: every turnInfo merged in order, as the webview merges them. */
function turnsOf(ui: FakeUi): Map<string, TurnInfo> {
  const turns = new Map<string, TurnInfo>();
  for (const message of ui.of("turnInfo")) {
    for (const info of message.turns) {
      const merged: TurnInfo = { ...turns.get(info.turnId), ...info };
      if (info.undoneBy === "") delete merged.undoneBy;
      turns.set(info.turnId, merged);
    }
  }
  return turns;
}

describe("a turn's files, diffs, undo and redo against the real runtime", { timeout: 180_000 }, () => {
  it("lists what a turn changed, opens the diffs, undoes, refuses a conflict, reverts anyway and redoes", async (t) => {
    const h = await harness(t);
    requireAdvertised(h, "openvaala/getTurnDiff");
    requireAdvertised(h, "openvaala/revertTurn");
    const ws = h.runtime.workspace;
    const main = join(ws, "main.py");
    writeFileSync(main, "def greet():\n    return 'hi'\n\n\nprint(greet())\n");
    await h.model.enqueue(call("c1", "edit", { path: "main.py", old_string: "return 'hi'", new_string: "return 'hello, world'" }));
    await h.model.enqueue(call("c2", "write_file", { path: "notes/todo.md", content: "# todo\n\n- greet louder\n" }));
    await h.model.enqueue([["text", "Changed the greeting and wrote a todo."]]);

    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client, pathToFileURL(ws).toString()));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await controller.handle({ type: "create" });
    await controller.handle({ type: "submit", content: [{ type: "text", text: "make the greeting louder" }], mode: "queue" });

    // live: turnDiffUpdated after each call, then the turn's own diff once it ended
    const turnId = await waitFor(() => {
      for (const [id, info] of turnsOf(ui)) if (info.status === "completed" && info.files?.length === 2 && info.complete === true) return id;
      return undefined;
    }, "the turn's two files with its diff");
    const info = turnsOf(ui).get(turnId);
    assert.ok(info?.files);
    const byName = new Map(info.files.map((file) => [file.path.slice(ws.length + 1), file]));
    assert.deepEqual(byName.get("main.py"), { path: join(ws, "main.py"), kind: "update", additions: 1, deletions: 1 });
    assert.deepEqual(byName.get("notes/todo.md"), { path: join(ws, "notes", "todo.md"), kind: "add", additions: 3, deletions: 0 });
    assert.ok(
      ui.posts.some((m) => m.type === "ops" && m.ops.some((op) => op.op === "turnFiles" && op.turnId === turnId)),
      "the runtime's turnDiffUpdated reached the view while the turn ran",
    );

    // the diff editor: the whole file before and after, the before rebuilt from the diff
    await controller.handle({ type: "openDiff", turnId, path: join(ws, "main.py") });
    const diff = ui.diffs.at(-1);
    assert.ok(diff);
    assert.equal(diff.before, "def greet():\n    return 'hi'\n\n\nprint(greet())\n");
    assert.equal(diff.after, "def greet():\n    return 'hello, world'\n\n\nprint(greet())\n");
    assert.equal(diff.note, undefined, "the whole file, not the hunks alone");
    assert.match(diff.title, /^main\.py \(changed by the turn\)$/);
    await controller.handle({ type: "openDiff", turnId, path: join(ws, "notes", "todo.md") });
    assert.deepEqual([ui.diffs.at(-1)?.before, ui.diffs.at(-1)?.after], ["", "# todo\n\n- greet louder\n"]);

    // the user edits a file the turn wrote: the undo is refused in the runtime's words
    writeFileSync(join(ws, "notes", "todo.md"), "# todo\n\n- greet louder\n- mine\n");
    await controller.handle({ type: "revertTurn", turnId });
    const refused = ui.of("revertConflict").at(-1);
    assert.ok(refused, "the conflict reaches the view");
    assert.equal(refused.turnId, turnId);
    assert.equal(refused.redo, false);
    assert.match(refused.message, /todo\.md/);
    assert.match(refused.message, /force/);
    assert.deepEqual(refused.files.map((file) => file.path), [join(ws, "notes", "todo.md")]);
    assert.equal(readFileSync(main, "utf8").includes("hello, world"), true, "nothing was reverted");

    // Revert anyway (force): both files go back
    await controller.handle({ type: "revertTurn", turnId, force: true });
    assert.equal(readFileSync(main, "utf8"), "def greet():\n    return 'hi'\n\n\nprint(greet())\n");
    assert.equal(existsSync(join(ws, "notes", "todo.md")), false);
    const undone = turnsOf(ui).get(turnId);
    assert.ok(undone?.undoneBy, "the turn shows as undone, with the revert that redoes it");
    assert.match(ui.of("notice").at(-1)?.message ?? "", /^Undone: 2 files restored\.$/);

    // Redo: the revert's own turn reverted
    await controller.handle({ type: "revertTurn", turnId: undone.undoneBy, redo: true });
    assert.equal(readFileSync(main, "utf8"), "def greet():\n    return 'hello, world'\n\n\nprint(greet())\n");
    assert.equal(readFileSync(join(ws, "notes", "todo.md"), "utf8"), "# todo\n\n- greet louder\n- mine\n", "the forced undo overwrote the user's line; redo puts back what the undo took");
    assert.equal(turnsOf(ui).get(turnId)?.undoneBy, undefined);

    // a reopened view (history) lists the same files under the turn
    const fresh = new FakeUi();
    const again = new ChatController(fresh, provider(h.runtime.client, pathToFileURL(ws).toString()));
    t.after(() => again.dispose());
    await again.handle({ type: "ready" });
    const conversationId = ui.of("opened")[0]?.conversation.id;
    assert.ok(conversationId);
    await again.handle({ type: "open", conversationId });
    await waitFor(() => turnsOf(fresh).get(turnId)?.complete === true, "the files of the turn in history");
    assert.deepEqual(
      turnsOf(fresh).get(turnId)?.files?.map((file) => [file.kind, file.additions, file.deletions]).sort(),
      [["add", 3, 0], ["update", 1, 1]],
    );
    assert.equal(turnsOf(fresh).get(turnId)?.reason, "completed");
  });

  it("sends an @-mentioned file and a selection as input the model reads, with path and lines", async (t) => {
    const h = await harness(t);
    const ws = h.runtime.workspace;
    mkdirSync(join(ws, "src"));
    writeFileSync(join(ws, "src", "app.ts"), "export const a = 1;\nexport const b = 2;\n");
    await h.model.enqueue([["text", "Seen."]]);
    const ui = new FakeUi();
    ui.files.set("src/app.ts", "export const a = 1;\nexport const b = 2;\n");
    ui.files.set("README.md", "# x\n");
    const controller = new ChatController(ui, provider(h.runtime.client, pathToFileURL(ws).toString()));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await controller.handle({ type: "create" });

    await controller.handle({ type: "mentionQuery", requestId: 7, query: "app" });
    assert.deepEqual(ui.of("mentions").at(-1), { type: "mentions", requestId: 7, query: "app", items: [{ path: "src/app.ts" }] });

    await controller.handle({
      type: "submit",
      content: [{ type: "text", text: "what does @src/app.ts export?" }],
      mode: "queue",
      context: [
        { path: "src/app.ts" },
        { path: "lib/util.py", uri: "/elsewhere/lib/util.py", startLine: 3, endLine: 4, text: "def f():\n    return 1" },
      ],
    });
    let requests = await h.model.requests();
    for (let tries = 0; requests.length === 0 && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      requests = await h.model.requests();
    }
    const request = requests[0];
    assert.ok(request, "the model was asked");
    const user = JSON.stringify(request.json.messages?.filter((message) => message.role === "user"));
    assert.match(user, /what does @src\/app\.ts export\?/);
    assert.match(user, /<file path=\\"src\/app\.ts\\">\\nexport const a = 1;\\nexport const b = 2;\\n<\/file>/);
    assert.match(user, /<file path=\\"lib\/util\.py\\" lines=\\"3-4\\">\\ndef f\(\):\\n {4}return 1\\n<\/file>/);
  });

  it("shows a turn cut by a runtime restart with its partial answer and why", async (t) => {
    const h = await harness(t);
    // a second of quiet after the text: the runtime saves a streaming item a second after it grew
    await h.model.enqueue([["text", "Half of the answer, "], ["pause", 60]]);
    const ui = new FakeUi();
    const controller = new ChatController(ui, provider(h.runtime.client, pathToFileURL(h.runtime.workspace).toString()));
    t.after(() => controller.dispose());
    await controller.handle({ type: "ready" });
    await controller.handle({ type: "create" });
    await controller.handle({ type: "submit", content: [{ type: "text", text: "a long question" }], mode: "queue" });
    const streamed = await waitFor(() => {
      for (const message of ui.of("ops")) {
        for (const op of message.ops) if (op.op === "delta" && op.delta.includes("Half of the answer")) return op.itemId;
      }
      return undefined;
    }, "the answer to stream");
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    process.kill(h.runtime.hostPid(), "SIGKILL");

    // after the restart: the same item, saved as the runtime kept it, `interrupted`; the turn says why
    const saved = await waitFor(() => {
      for (const message of ui.of("ops")) {
        for (const op of message.ops) if (op.op === "saved" && op.item.id === streamed) return op.item;
      }
      return undefined;
    }, "the partial answer saved", 30_000);
    assert.equal(saved.status, "interrupted");
    assert.equal(saved.content?.map((part) => part.text).join(""), "Half of the answer, ");
    assert.ok(!ui.of("ops").some((m) => m.ops.some((op) => op.op === "removed" && op.itemId === streamed)), "the answer never left the screen");
    const turnId = saved.turnId;
    assert.ok(turnId);
    const info = await waitFor(() => turnsOf(ui).get(turnId)?.reason === "runtimeStopped" && turnsOf(ui).get(turnId), "the turn's reason", 30_000);
    assert.equal(info.status, "interrupted");
  });
});
