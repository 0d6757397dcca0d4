// One real runtime and one scripted model per test, stopped afterwards (their processes included).
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { OpenConversation } from "../../src/client/conversation";
import type { AgentDefinition, CreateConversationParams, Definitions } from "../../src/protocol/generated";
import { FakeModel, type Step } from "./fakeModel";
import { missingServer } from "./paths";
import { Runtime, type RuntimeOptions } from "./runtime";
import { Screen } from "./screen";

export interface Harness {
  model: FakeModel;
  runtime: Runtime;
  /** Creates a conversation (`params`: e.g. its agent), opens it and follows its main session on a Screen. */
  conversation(runtime?: Runtime, params?: CreateConversationParams): Promise<{ open: OpenConversation; screen: Screen }>;
  /** A second editor on the same project: another `openvaala-lsp` front, same OPENVAALA_HOME and
   * workspace, hence the same shared runtime host. Stopped before the first. */
  secondEditor(options?: Omit<RuntimeOptions, "model" | "join">): Promise<Runtime>;
  /** `openvaala/setDefinitions` with the fake model and these agents (it replaces the config files). */
  define(agents: AgentDefinition[]): Promise<void>;
}


/** The agent that makes approvals happen: everything runs but the shell, which asks. */
export const ASKS_FOR_SHELL: AgentDefinition = {
  name: "default",
  permissions: { default: "allow", tools: { shell: "ask" } },
};

export async function harness(t: TestContext, options: Omit<RuntimeOptions, "model"> & { noModel?: boolean } = {}): Promise<Harness> {
  // never skipped: without the server the integration tests fail and say how to get it
  const missing = missingServer();
  if (missing) throw new Error(missing);
  const model = await FakeModel.start();
  let runtime: Runtime;
  try {
    runtime = await Runtime.start({ ...options, ...(options.noModel ? {} : { model }) });
  } catch (error) {
    await model.stop();
    throw error;
  }
  const others: Runtime[] = [];
  t.after(async () => {
    for (const other of others.splice(0)) await other.stop();
    await runtime.stop();
    await model.stop();
  });
  return {
    model,
    runtime,
    async conversation(on = runtime, params = {}) {
      const conversation = await on.client.createConversation(params);
      const open = await on.client.open(conversation.id);
      return { open, screen: new Screen(open) };
    },
    async secondEditor(more = {}) {
      const other = await Runtime.start({ ...more, join: runtime });
      others.push(other);
      return other;
    },
    async define(agents) {
      const definitions: Definitions = {
        models: [
          {
            ref: { provider: "fake", name: "fake-model" },
            api: "openai-chat",
            baseUrl: model.baseUrl,
            apiKeyEnv: "FAKE_API_KEY",
            contextWindow: 8000,
          },
        ],
        agents,
      };
      await runtime.client.rpc.request("openvaala/setDefinitions", definitions);
    },
  };
}

/** A lead agent that runs everything, with a sub-agent whose shell asks: the approval comes from the
 * sub-agent's session, milliseconds after it started. */
export const LEAD_AND_HELPER: AgentDefinition[] = [
  { name: "lead", subAgents: ["helper"], permissions: { default: "allow" }, titles: false },
  { name: "helper", description: "Makes files", permissions: { default: "allow", tools: { shell: "ask" } }, titles: false },
];

/** The fake model's answers for one delegation to the helper, whose shell call asks. */
export function delegation(command: string): Step[][] {
  return [
    [["tool_call", "c1", "subagent", [JSON.stringify({ agent: "helper", task: "make the file" })]], ["finish"]],
    [["tool_call", "c2", "shell", [JSON.stringify({ command })]], ["finish"]],
    [["text", "made it"]],
    [["text", "The helper made it."]],
  ];
}

/** Fails (never skips) when the server does not advertise `method`: protocol 0.3 servers all do. */
export function requireAdvertised(h: Harness, method: string): void {
  assert.ok(
    h.runtime.client.features.methods.has(method),
    `the server does not advertise ${method} (initialize → capabilities.experimental.openvaala.methods)`,
  );
}
