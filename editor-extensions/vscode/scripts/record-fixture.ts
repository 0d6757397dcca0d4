// Records the wire of a real run — the real openvaala-lsp, the scripted fake model, this extension's
// own client — into test/fixtures/session-stream.json, the fixture the webview tests replay.
//   npm run record-fixture
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FakeModel } from "../test/support/fakeModel";
import { FIXTURES } from "../test/support/paths";
import { RecordingConnection } from "../test/support/recording";
import { Runtime } from "../test/support/runtime";
import { waitFor } from "../test/support/wait";

const ANSWER = [
  "## What is here\n\n",
  "The project has **one file**, `greeting.txt`, ",
  "and the shell said `hi`.\n\n",
  "- It greets the world\n",
  "- It is short\n\n",
  "```sh\necho hi\n```\n\n",
  "Model output cannot inject markup: <script>alert(1)</script> <img src=x onerror=alert(1)> ",
  "and [a javascript: link](javascript:alert(1)) stays inert.",
];

/** The recorded agent: everything runs, but the shell asks (so the run has approval events). */
const AGENT = { name: "default", permissions: { default: "allow" as const, tools: { shell: "ask" as const } } };

async function main(): Promise<void> {
  const model = await FakeModel.start();
  let recorder: RecordingConnection | undefined;
  const runtime = await Runtime.start({
    model,
    wrap: (connection) => (recorder = new RecordingConnection(connection)),
  });
  try {
    writeFileSync(join(runtime.workspace, "greeting.txt"), "hello world\nsecond line\n");
    await model.enqueue(
      [
        ["reasoning", "The user asks what is in the project. "],
        ["pause", 0.05],
        ["reasoning", "I should list the files ", "and say hi with the shell."],
        ["pause", 0.15],
        ["text", "Let me look at ", "the project first."],
        ["tool_call", "call_1", "shell", ['{"command":', ' "echo hi && ls"}']],
        ["finish", { prompt_tokens: 900, completion_tokens: 60 }],
      ],
      [
        ...ANSWER.slice(0, 3).flatMap((piece) => [["text", piece], ["pause", 0.05]]),
        ["pause", 1.5],
        ...ANSWER.slice(3).flatMap((piece) => [["text", piece], ["pause", 0.05]]),
        ["finish", { prompt_tokens: 1100, completion_tokens: 120 }],
      ],
      [
        [
          "tool_call",
          "call_2",
          "edit",
          ['{"path": "greeting.txt", "old_string": "hello world", ', '"new_string": "hello openvaala"}'],
        ],
        ["finish", { prompt_tokens: 1300, completion_tokens: 40 }],
      ],
      [
        ["text", "Changed it. I will also clear the old build output."],
        ["tool_call", "call_3", "shell", ['{"command": "rm -rf build/"}']],
        ["finish", { prompt_tokens: 1400, completion_tokens: 30 }],
      ],
      [
        ["text", "Changed the greeting to *hello openvaala* and left `build/` alone, as you asked."],
        ["finish", { prompt_tokens: 1500, completion_tokens: 20 }],
      ],
    );
    const client = runtime.client;
    await client.rpc.request("openvaala/setDefinitions", {
      models: [
        { ref: { provider: "fake", name: "fake-model" }, api: "openai-chat", baseUrl: model.baseUrl, apiKeyEnv: "FAKE_API_KEY", contextWindow: 8000 },
      ],
      agents: [AGENT],
    });
    const conversation = await client.createConversation();
    const open = await client.open(conversation.id);
    const main = open.mainSession;
    if (!main) throw new Error("no main session");
    const timeline = main.subscription.timeline;
    const approvalFor = (command: string) =>
      waitFor(() => timeline.snapshot().approvals.find((a) => a.approval.command === command), `the approval of ${command}`, 30_000);
    await open.setTitle("Tour of the project");
    await open.submit([{ type: "text", text: "What is in this project? Then say hi." }]);
    // the user reads the prompt for a moment, then allows the command once
    const first = await approvalFor("echo hi && ls");
    await delay(300);
    await open.answerApproval(first.itemId, "allowOnce");
    await waitFor(
      () => timeline.snapshot().items.some((logged) => logged.item.type === "toolResult"),
      "the shell result",
    );
    await waitFor(
      () => timeline.snapshot().streaming.some((s) => s.item.type === "assistantMessage" && (s.item.content?.[0]?.text ?? "").length > 10),
      "the answer to stream",
    );
    await open.submit([{ type: "text", text: "Now change the greeting to openvaala." }]);
    // the second command deletes things: denied, with a word for the model
    const second = await approvalFor("rm -rf build/");
    await delay(300);
    await open.answerApproval(second.itemId, "deny", "Keep build/, I still need it.");
    await waitFor(
      () => timeline.pendingInputs().length === 0 && timeline.state.state === "idle" && timeline.snapshot().items.some((l) => l.item.type === "assistantMessage" && (l.item.content?.[0]?.text ?? "").includes("left `build/` alone")),
      "both turns",
      30_000,
    );
    await delay(500); // the title call and the last usage events
    const features = client.features;
    const fixture = {
      description:
        "The wire of a real run (openvaala-lsp, the scripted fake model, this extension's client), recorded by scripts/record-fixture.ts.",
      server: {
        serverVersion: features.serverVersion,
        protocolVersion: features.protocolVersion,
        methods: [...features.methods],
        ...(features.sandbox ? { sandbox: features.sandbox } : {}),
      },
      clientId: runtime.clientId,
      conversationId: conversation.id,
      sessionId: main.session.id,
      log: recorder?.log ?? [],
    };
    writeFileSync(join(FIXTURES, "session-stream.json"), JSON.stringify(fixture, null, 1) + "\n");
    console.log(`recorded ${fixture.log.length} messages into ${join(FIXTURES, "session-stream.json")}`);
    open.dispose();
  } finally {
    await runtime.stop();
    await model.stop();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
