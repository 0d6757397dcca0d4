// One real runtime and one scripted model per test, stopped afterwards (their processes included).
import type { TestContext } from "node:test";
import type { OpenConversation } from "../../src/client/conversation";
import { FakeModel } from "./fakeModel";
import { missingServer } from "./paths";
import { Runtime, type RuntimeOptions } from "./runtime";
import { Screen } from "./screen";

export interface Harness {
  model: FakeModel;
  runtime: Runtime;
  /** Creates a conversation, opens it and follows its main session on a Screen. */
  conversation(): Promise<{ open: OpenConversation; screen: Screen }>;
}

/** The reason to skip integration tests here, printed by the runner. */
export const SKIP_INTEGRATION = missingServer();

export async function harness(t: TestContext, options: Omit<RuntimeOptions, "model"> & { noModel?: boolean } = {}): Promise<Harness> {
  const model = await FakeModel.start();
  let runtime: Runtime;
  try {
    runtime = await Runtime.start({ ...options, ...(options.noModel ? {} : { model }) });
  } catch (error) {
    await model.stop();
    throw error;
  }
  t.after(async () => {
    await runtime.stop();
    await model.stop();
  });
  return {
    model,
    runtime,
    async conversation() {
      const conversation = await runtime.client.createConversation();
      const open = await runtime.client.open(conversation.id);
      return { open, screen: new Screen(open) };
    },
  };
}

/** Skips a test while the server does not advertise `method`, saying why; runs it once it does. */
export function requireMethod(t: TestContext, h: Harness, method: string): boolean {
  if (h.runtime.client.features.methods.has(method)) return true;
  t.skip(`the server does not advertise ${method} yet (initialize → capabilities.experimental.openvaala.methods); this test runs once it does`);
  return false;
}
