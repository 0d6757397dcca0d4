// One session kept in sync with the runtime: subscribe, list what was saved, apply the events that
// follow, and do it all again whenever the subscription is lost (runtime restarted, editor too
// slow, seq gap, connection restarted) without losing or repeating anything on screen.
import { Emitter, type Disposable } from "./emitter";
import { RESUBSCRIBE_KINDS, errorKind, toProtocolError } from "../protocol/errors";
import type {
  ErrorInfo,
  GetSessionSnapshotResult,
  LoggedItem,
  LoggedItemPage,
  SessionEvent,
  SubscribeSessionResult,
} from "../protocol/generated";
import type { OpenvaalaRpc } from "./rpc";
import { DEFAULT_RETRY, delay, isTransient, type RetryPolicy } from "./retry";
import type { SubscriptionHub, SubscriptionSink } from "./subscriptions";
import { SessionTimeline, type TimelineOp } from "./timeline";

export type SyncState =
  | { state: "connecting" }
  | { state: "live" }
  | { state: "resyncing"; reason: string }
  | { state: "closed"; reason: ErrorInfo };

export interface SessionSubscriptionOptions {
  /** Items listed on first open (newest first); older ones load on request. */
  initialPage?: number;
  retry?: RetryPolicy;
}

const LIST_LIMIT = 500;

export class SessionSubscription implements Disposable {
  readonly timeline: SessionTimeline;
  private readonly opsEmitter = new Emitter<TimelineOp[]>();
  private readonly syncEmitter = new Emitter<SyncState>();
  /** Timeline changes, in order, each batch ready to apply to the screen. */
  readonly onOps = this.opsEmitter.event;
  readonly onSyncState = this.syncEmitter.event;
  private subscriptionId: string | undefined;
  private attached: Disposable | undefined;
  private syncing: Promise<void> | undefined;
  private again = false;
  private started = false;
  private disposed = false;
  private sync: SyncState = { state: "connecting" };
  private readonly initialPage: number;
  private readonly retry: RetryPolicy;

  constructor(
    private readonly rpc: OpenvaalaRpc,
    private readonly hub: SubscriptionHub,
    readonly conversationId: string,
    readonly sessionId: string,
    /** Opens the conversation again (a restarted runtime holds none open). */
    private readonly reopen: () => Promise<void>,
    options: SessionSubscriptionOptions = {},
  ) {
    this.timeline = new SessionTimeline(sessionId);
    this.initialPage = options.initialPage ?? 200;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  get syncState(): SyncState {
    return this.sync;
  }

  /** Subscribes and loads the newest page of history. */
  start(): Promise<void> {
    return this.resync("open");
  }

  /** Subscribes again and lists what was saved after the last ordinal on screen. Concurrent calls share one run. */
  resync(reason: string): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (this.syncing !== undefined) {
      this.again = true;
      return this.syncing;
    }
    if (this.started) this.setSync({ state: "resyncing", reason });
    this.syncing = this.runSync().finally(() => {
      this.syncing = undefined;
      if (this.again && !this.disposed) {
        this.again = false;
        void this.resync(reason);
      }
    });
    return this.syncing;
  }

  private async runSync(): Promise<void> {
    let wait = this.retry.firstDelayMs;
    for (let attempt = 1; !this.disposed; attempt++) {
      this.again = false;
      try {
        await this.subscribeOnce();
        return;
      } catch (error) {
        const kind = errorKind(error);
        const retryable = isTransient(error) || kind === "conversationNotOpen" || kind === "subscriberTooSlow";
        if (this.disposed) return;
        if (!retryable || attempt >= this.retry.attempts) {
          const protocolError = toProtocolError(error);
          this.setSync({ state: "closed", reason: { kind: protocolError.kind, message: protocolError.message } });
          if (!this.started) throw protocolError;
          return;
        }
        await delay(wait);
        wait = Math.min(wait * 2, this.retry.maxDelayMs);
      }
    }
  }

  private async subscribeOnce(): Promise<void> {
    this.detach(true);
    const buffered: SessionEvent[][] = [];
    let live = false;
    const sink: SubscriptionSink = {
      message: (message) => {
        if (message.method !== "openvaala/sessionEvent") return;
        const events = message.params.events;
        if (live) this.emit(this.timeline.applyEvents(events));
        else buffered.push(events);
      },
      closed: (reason) => this.onClosed(reason),
      gap: (expected, got) => {
        this.attached = undefined;
        void this.resync(`notification ${expected} of the subscription went missing (got ${got})`);
      },
    };

    const result = await this.subscribe().then((first) => this.wholeSnapshot(first));
    if (this.disposed) {
      void this.rpc.request("openvaala/unsubscribe", { subscriptionId: result.subscriptionId }).catch(() => undefined);
      return;
    }
    this.subscriptionId = result.subscriptionId;
    this.attached = this.hub.attach(result.subscriptionId, sink);

    const ops: TimelineOp[] = [];
    if (!this.started) {
      const page = await this.rpc.request("openvaala/listItems", {
        conversationId: this.conversationId,
        sessionId: this.sessionId,
        order: "desc",
        limit: this.initialPage,
      });
      ops.push(...this.timeline.loadLatest(page.items, page.nextCursor !== undefined));
    } else {
      ops.push(...this.timeline.addSaved(await this.listAfter(this.timeline.lastOrdinal)));
    }
    ops.push(...this.timeline.applySubscription(result));
    for (const events of buffered) ops.push(...this.timeline.applyEvents(events));
    live = true;
    this.started = true;
    this.emit(ops);
    this.setSync({ state: "live" });
  }

  private async subscribe(): Promise<SubscribeSessionResult> {
    const params = { conversationId: this.conversationId, sessionId: this.sessionId };
    try {
      return await this.rpc.request("openvaala/subscribeSession", params);
    } catch (error) {
      if (errorKind(error) !== "conversationNotOpen") throw error;
      await this.reopen();
      return await this.rpc.request("openvaala/subscribeSession", params);
    }
  }

  /**
   * A snapshot too big for one message comes in pages (`snapshotCursor`), all of the one snapshot
   * taken at the subscription: the rest is fetched before any event is applied.
   */
  private async wholeSnapshot(first: SubscribeSessionResult): Promise<SubscribeSessionResult> {
    if (first.snapshotCursor === undefined) return first;
    const whole = {
      ...first,
      pendingApprovals: [...first.pendingApprovals],
      pendingInputs: [...first.pendingInputs],
      streamingItems: [...first.streamingItems],
    };
    let cursor: string | undefined = first.snapshotCursor;
    while (cursor !== undefined && !this.disposed) {
      const page: GetSessionSnapshotResult = await this.rpc.request("openvaala/getSessionSnapshot", {
        subscriptionId: first.subscriptionId,
        cursor,
      });
      whole.pendingApprovals.push(...page.pendingApprovals);
      whole.pendingInputs.push(...page.pendingInputs);
      whole.streamingItems.push(...page.streamingItems);
      cursor = page.snapshotCursor;
    }
    delete whole.snapshotCursor;
    return whole;
  }

  private async listAfter(ordinal: number): Promise<LoggedItem[]> {
    const items: LoggedItem[] = [];
    let cursor: number | undefined = ordinal;
    do {
      const page: LoggedItemPage = await this.rpc.request("openvaala/listItems", {
        conversationId: this.conversationId,
        sessionId: this.sessionId,
        order: "asc",
        limit: LIST_LIMIT,
        cursor,
      });
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== undefined && !this.disposed);
    return items;
  }

  /** Loads the page of items before the oldest one on screen. */
  async loadEarlier(limit = 200): Promise<void> {
    const oldest = this.timeline.oldestOrdinal;
    if (oldest === undefined || !this.timeline.hasEarlier) return;
    const page = await this.rpc.request("openvaala/listItems", {
      conversationId: this.conversationId,
      sessionId: this.sessionId,
      order: "desc",
      limit,
      cursor: oldest,
    });
    this.emit(this.timeline.loadEarlier(page.items, page.nextCursor !== undefined));
  }

  private onClosed(reason: ErrorInfo): void {
    this.attached = undefined;
    this.subscriptionId = undefined;
    if (this.disposed || reason.kind === "unsubscribed") return;
    if (RESUBSCRIBE_KINDS.has(reason.kind)) {
      void this.resync(reason.kind);
      return;
    }
    this.setSync({ state: "closed", reason });
  }

  private detach(unsubscribe: boolean): void {
    this.attached?.dispose();
    this.attached = undefined;
    const id = this.subscriptionId;
    this.subscriptionId = undefined;
    if (unsubscribe && id !== undefined) {
      // best effort: after a restart the id is unknown to the new runtime, which is fine
      void this.rpc.request("openvaala/unsubscribe", { subscriptionId: id }).catch(() => undefined);
    }
  }

  private emit(ops: TimelineOp[]): void {
    if (ops.length > 0 && !this.disposed) this.opsEmitter.fire(ops);
  }

  private setSync(state: SyncState): void {
    this.sync = state;
    this.syncEmitter.fire(state);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.detach(true);
    this.opsEmitter.dispose();
    this.syncEmitter.dispose();
  }
}
