// Turns a recorded wire log (test/fixtures/session-stream.json) into the messages the extension
// host posts to the chat view, through the client's own SessionTimeline: the snapshot of
// `subscribeSession` + `listItems`, then one `ops` message per `openvaala/sessionEvent`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { OPTIONAL_METHODS } from "../../src/client/openvaalaClient";
import type { SandboxState } from "../../src/client/rpc";
import { SessionTimeline } from "../../src/client/timeline";
import type {
  Conversation,
  ConversationEventParams,
  LoggedItemPage,
  SessionEvent,
  SessionEventParams,
  SubscribeConversationResult,
  SubscribeSessionResult,
} from "../../src/protocol/generated";
import type { HostMessage } from "../../src/shared/messages";
import { FIXTURES } from "./paths";
import type { WireEntry } from "./recording";

export interface Fixture {
  server: { serverVersion: string; protocolVersion: string; methods: string[]; sandbox?: SandboxState };
  /** The clientId the recording connection sent: its answers are "this window". */
  clientId?: string;
  conversationId: string;
  sessionId: string;
  log: WireEntry[];
}

export function loadFixture(name = "session-stream.json"): Fixture {
  return JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as Fixture;
}

function response<T>(fixture: Fixture, method: string): T {
  const entry = fixture.log.find((e) => e.kind === "response" && e.method === method && e.result !== undefined);
  if (!entry || entry.kind !== "response") throw new Error(`the fixture has no answer to ${method}`);
  return entry.result as T;
}

export interface ReplayStep {
  /** The session events of this notification (empty for the opening snapshot). */
  events: SessionEvent[];
  messages: HostMessage[];
}

export class Replay {
  readonly timeline: SessionTimeline;
  readonly conversation: Conversation;
  private readonly subscriptionId: string;
  private readonly conversationSubscriptionId: string;
  /** The conversation's title as the recorded events left it. */
  title: string;

  constructor(
    readonly fixture: Fixture,
    readonly actions: string[] = OPTIONAL_METHODS.filter((method) => fixture.server.methods.includes(method)),
  ) {
    this.timeline = new SessionTimeline(fixture.sessionId);
    this.conversation = response<Conversation>(fixture, "openvaala/openConversation");
    this.subscriptionId = response<SubscribeSessionResult>(fixture, "openvaala/subscribeSession").subscriptionId;
    this.conversationSubscriptionId = response<SubscribeConversationResult>(fixture, "openvaala/subscribeConversation").subscriptionId;
    this.title = this.conversation.title;
  }

  /** What the view gets when the conversation opens. */
  opening(): HostMessage[] {
    const subscribed = response<SubscribeSessionResult>(this.fixture, "openvaala/subscribeSession");
    const listed = response<LoggedItemPage>(this.fixture, "openvaala/listItems");
    const conversationInfo = response<SubscribeConversationResult>(this.fixture, "openvaala/subscribeConversation");
    const main = conversationInfo.sessions.find((info) => info.session.id === this.fixture.sessionId);
    if (!main) throw new Error("the fixture's conversation has no main session");
    this.timeline.setRuntimeInfo(main);
    this.timeline.loadLatest(listed.items, listed.nextCursor !== undefined);
    this.timeline.applySubscription(subscribed);
    return [
      {
        type: "init",
        folders: [{ key: "file:///ws", name: "ws" }],
        folder: "file:///ws",
        connection: {
          state: "ready",
          serverVersion: this.fixture.server.serverVersion,
          protocolVersion: this.fixture.server.protocolVersion,
          ...(this.fixture.server.sandbox ? { sandbox: this.fixture.server.sandbox } : {}),
          ...(this.fixture.clientId ? { clientId: this.fixture.clientId } : {}),
        },
        actions: this.actions,
      },
      { type: "opened", conversation: this.conversation, mainSessionId: this.fixture.sessionId },
      { type: "session", session: main.session, snapshot: this.timeline.snapshot() },
    ];
  }

  /** Every later notification of the recorded run, as the view would get it. */
  *steps(): Generator<ReplayStep> {
    for (const entry of this.fixture.log) {
      if (entry.kind !== "notification") continue;
      if (entry.method === "openvaala/sessionEvent") {
        const params = entry.params as SessionEventParams;
        if (params.subscriptionId !== this.subscriptionId) continue;
        const events = params.events;
        yield { events, messages: [{ type: "ops", sessionId: this.fixture.sessionId, ops: this.timeline.applyEvents(events) }] };
      } else if (entry.method === "openvaala/conversationEvent") {
        const params = entry.params as ConversationEventParams;
        if (params.subscriptionId !== this.conversationSubscriptionId) continue;
        const event = params.event;
        if (event.type === "sessionUpdated") {
          const ops = this.timeline.setRuntimeInfo(event.info);
          yield { events: [], messages: [{ type: "ops", sessionId: this.fixture.sessionId, ops }] };
        } else if (event.type === "titleChanged") {
          this.title = event.title;
          yield { events: [], messages: [{ type: "conversation", conversation: { ...this.conversation, title: event.title } }] };
        }
      }
    }
  }

  /** Ops for events that are not in the recording (e.g. an approval that another window answers). */
  apply(events: SessionEvent[]): HostMessage {
    return { type: "ops", sessionId: this.fixture.sessionId, ops: this.timeline.applyEvents(events) };
  }
}
