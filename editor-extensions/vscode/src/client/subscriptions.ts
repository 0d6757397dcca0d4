// Routes the four subscription notifications to their subscribers by `subscriptionId`, checking
// `seq` (which starts at 1 and grows by one per notification, PROTOCOL.md §3) so that a lost
// notification is seen as a gap instead of a silently wrong screen.
import type { Disposable } from "./emitter";
import type { OpenvaalaRpc } from "./rpc";
import type {
  ConversationEventParams,
  ErrorInfo,
  RunningConversationsParams,
  SessionEventParams,
} from "../protocol/generated";

export type SubscriptionMessage =
  | { method: "openvaala/sessionEvent"; params: SessionEventParams }
  | { method: "openvaala/conversationEvent"; params: ConversationEventParams }
  | { method: "openvaala/runningConversations"; params: RunningConversationsParams }
  | { method: "openvaala/subscriptionClosed"; params: { subscriptionId: string; reason: ErrorInfo } };

export interface SubscriptionSink {
  /** A notification in order (seq checked). */
  message(message: Exclude<SubscriptionMessage, { method: "openvaala/subscriptionClosed" }>): void;
  /** The server closed the subscription (`reason.kind` is an error kind or `unsubscribed`). */
  closed(reason: ErrorInfo): void;
  /** A notification went missing (seq jumped from `expected` to `got`): the subscriber must resync. */
  gap(expected: number, got: number): void;
}

interface Orphan {
  message: SubscriptionMessage;
  at: number;
}

/** How long and how many notifications for a not yet known subscription id are kept: they can
 * arrive before the code that sent `subscribe*` has read its answer. */
const ORPHAN_MS = 30_000;
const ORPHAN_LIMIT = 5_000;

export class SubscriptionHub implements Disposable {
  private readonly sinks = new Map<string, { sink: SubscriptionSink; nextSeq: number }>();
  private orphans: Orphan[] = [];
  private readonly registrations: Disposable[];

  constructor(rpc: OpenvaalaRpc) {
    this.registrations = [
      rpc.onNotification("openvaala/sessionEvent", (params) =>
        this.route({ method: "openvaala/sessionEvent", params }),
      ),
      rpc.onNotification("openvaala/conversationEvent", (params) =>
        this.route({ method: "openvaala/conversationEvent", params }),
      ),
      rpc.onNotification("openvaala/runningConversations", (params) =>
        this.route({ method: "openvaala/runningConversations", params }),
      ),
      rpc.onNotification("openvaala/subscriptionClosed", (params) =>
        this.route({ method: "openvaala/subscriptionClosed", params }),
      ),
    ];
  }

  /** Starts delivering a subscription's notifications, those that arrived before included. */
  attach(subscriptionId: string, sink: SubscriptionSink): Disposable {
    const entry = { sink, nextSeq: 1 };
    this.sinks.set(subscriptionId, entry);
    const early = this.orphans.filter((o) => o.message.params.subscriptionId === subscriptionId);
    if (early.length > 0) {
      this.orphans = this.orphans.filter((o) => o.message.params.subscriptionId !== subscriptionId);
      for (const orphan of early) this.deliver(subscriptionId, orphan.message);
    }
    return {
      dispose: () => {
        if (this.sinks.get(subscriptionId) === entry) this.sinks.delete(subscriptionId);
      },
    };
  }

  private route(message: SubscriptionMessage): void {
    const id = message.params.subscriptionId;
    if (this.sinks.has(id)) {
      this.deliver(id, message);
      return;
    }
    const now = Date.now();
    this.orphans = this.orphans.filter((o) => now - o.at < ORPHAN_MS).slice(-(ORPHAN_LIMIT - 1));
    this.orphans.push({ message, at: now });
  }

  private deliver(id: string, message: SubscriptionMessage): void {
    const entry = this.sinks.get(id);
    if (entry === undefined) return;
    if (message.method === "openvaala/subscriptionClosed") {
      this.sinks.delete(id);
      entry.sink.closed(message.params.reason);
      return;
    }
    const seq = message.params.seq;
    if (seq < entry.nextSeq) return; // a duplicate: already applied
    if (seq > entry.nextSeq) {
      this.sinks.delete(id);
      entry.sink.gap(entry.nextSeq, seq);
      return;
    }
    entry.nextSeq = seq + 1;
    entry.sink.message(message);
  }

  dispose(): void {
    for (const registration of this.registrations) registration.dispose();
    this.sinks.clear();
    this.orphans = [];
  }
}
