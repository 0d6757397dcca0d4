// An open conversation: its conversation subscription (title, sessions, sub-agent sessions), one
// SessionSubscription per session, and the actions of the chat view.
import { Emitter, type Disposable } from "./emitter";
import { RESUBSCRIBE_KINDS, errorKind } from "../protocol/errors";
import type {
  ApprovalDecision,
  ContentInput,
  Conversation,
  ConversationEvent,
  ErrorInfo,
  GetTurnDiffResult,
  ModelRef,
  RevertTurnResult,
  Session,
  SessionContextUsage,
  SessionInputMode,
  SessionRuntimeInfo,
  Turn,
} from "../protocol/generated";
import type { OpenvaalaRpc } from "./rpc";
import { DEFAULT_RETRY, delay, isTransient, withRetry, type RetryPolicy } from "./retry";
import { SessionSubscription, type SyncState } from "./sessionSubscription";
import type { SubscriptionHub, SubscriptionSink } from "./subscriptions";
import type { Approval, TimelineOp } from "./timeline";

export interface SessionOps {
  sessionId: string;
  ops: TimelineOp[];
}

export interface SessionEntry {
  session: Session;
  subscription: SessionSubscription;
}

export interface ConversationOptions {
  retry?: RetryPolicy;
  initialPage?: number;
}

function newInputId(): string {
  return `vscode-${globalThis.crypto.randomUUID()}`;
}

export class OpenConversation implements Disposable {
  private readonly sessionsById = new Map<string, SessionEntry>();
  private readonly opsEmitter = new Emitter<SessionOps>();
  private readonly conversationEmitter = new Emitter<Conversation>();
  private readonly sessionEmitter = new Emitter<SessionEntry>();
  private readonly syncEmitter = new Emitter<{ sessionId: string; state: SyncState }>();
  private readonly closedEmitter = new Emitter<ErrorInfo>();
  private readonly disposeEmitter = new Emitter<void>();
  /** Timeline changes of any of the conversation's sessions. */
  readonly onOps = this.opsEmitter.event;
  /** The conversation changed (title, archived, model, ...). */
  readonly onConversation = this.conversationEmitter.event;
  /** A session was added (a sub-agent's has `parentSessionId`). */
  readonly onSessionAdded = this.sessionEmitter.event;
  readonly onSyncState = this.syncEmitter.event;
  /** The conversation can no longer be followed (e.g. deleted elsewhere). */
  readonly onClosed = this.closedEmitter.event;
  readonly onDidDispose = this.disposeEmitter.event;
  private conversationSubscription: string | undefined;
  private conversationAttached: Disposable | undefined;
  private reopening: Promise<void> | undefined;
  private resyncing: Promise<void> | undefined;
  private disposed = false;
  private readonly retry: RetryPolicy;

  private constructor(
    private readonly rpc: OpenvaalaRpc,
    private readonly hub: SubscriptionHub,
    private current: Conversation,
    private readonly options: ConversationOptions,
  ) {
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** Opens (loads) the conversation in the runtime and follows all its sessions. */
  static async open(
    rpc: OpenvaalaRpc,
    hub: SubscriptionHub,
    conversationId: string,
    options: ConversationOptions = {},
  ): Promise<OpenConversation> {
    const conversation = await withRetry(() => rpc.request("openvaala/openConversation", { conversationId }), options.retry);
    const open = new OpenConversation(rpc, hub, conversation, options);
    try {
      await open.follow();
    } catch (error) {
      open.dispose();
      throw error;
    }
    return open;
  }

  get id(): string {
    return this.current.id;
  }

  get conversation(): Conversation {
    return this.current;
  }

  /** The main session: the one without a parent (created with the conversation). */
  get mainSession(): SessionEntry | undefined {
    for (const entry of this.sessionsById.values()) if (!entry.session.parentSessionId) return entry;
    return undefined;
  }

  get sessions(): SessionEntry[] {
    return [...this.sessionsById.values()];
  }

  session(sessionId: string): SessionEntry | undefined {
    return this.sessionsById.get(sessionId);
  }

  /** What waits for an answer in the whole conversation, once each: the main session's timeline
   * holds its sub-agents' approvals too (the runtime sends them to the sessions above), and a
   * followed sub-agent session holds its own. Any of them is answered with `answerApproval`. */
  pendingApprovals(): Approval[] {
    const all = new Map<string, Approval>();
    for (const entry of this.sessionsById.values()) {
      for (const approval of entry.subscription.timeline.pendingApprovals()) all.set(approval.itemId, approval);
    }
    return [...all.values()];
  }

  private async follow(): Promise<void> {
    const result = await this.subscribeConversation();
    if (result.title !== this.current.title) this.current = { ...this.current, title: result.title };
    await Promise.all(result.sessions.map((info) => this.addSession(info.session, info)));
  }

  private async subscribeConversation() {
    this.conversationAttached?.dispose();
    const previous = this.conversationSubscription;
    if (previous !== undefined) {
      void this.rpc.request("openvaala/unsubscribe", { subscriptionId: previous }).catch(() => undefined);
    }
    const params = { conversationId: this.id };
    let result;
    try {
      result = await this.rpc.request("openvaala/subscribeConversation", params);
    } catch (error) {
      if (errorKind(error) !== "conversationNotOpen") throw error;
      await this.reopen();
      result = await this.rpc.request("openvaala/subscribeConversation", params);
    }
    this.conversationSubscription = result.subscriptionId;
    const sink: SubscriptionSink = {
      message: (message) => {
        if (message.method === "openvaala/conversationEvent") this.onConversationEvent(message.params.event);
      },
      closed: (reason) => {
        this.conversationSubscription = undefined;
        if (this.disposed || reason.kind === "unsubscribed") return;
        if (RESUBSCRIBE_KINDS.has(reason.kind)) void this.resync();
        else this.closedEmitter.fire(reason);
      },
      gap: () => {
        void this.resync();
      },
    };
    this.conversationAttached = this.hub.attach(result.subscriptionId, sink);
    return result;
  }

  private onConversationEvent(event: ConversationEvent): void {
    switch (event.type) {
      case "titleChanged":
        this.current = { ...this.current, title: event.title };
        this.conversationEmitter.fire(this.current);
        break;
      case "conversationUpdated":
        this.current = event.conversation;
        this.conversationEmitter.fire(this.current);
        break;
      case "sessionAdded":
        this.addSession(event.session).catch((error: unknown) => console.error("openvaala: following a session failed", error));
        break;
      case "sessionUpdated": {
        const info = event.info;
        const entry = this.sessionsById.get(info.session.id);
        if (entry === undefined) {
          this.addSession(info.session, info).catch((error: unknown) => console.error("openvaala: following a session failed", error));
          return;
        }
        entry.session = info.session;
        this.opsEmitter.fire({ sessionId: info.session.id, ops: entry.subscription.timeline.setRuntimeInfo(info) });
        break;
      }
      default:
        break; // unknown conversation events are ignored
    }
  }

  private async addSession(session: Session, info?: SessionRuntimeInfo): Promise<void> {
    if (this.sessionsById.has(session.id) || this.disposed) return;
    const subscription = new SessionSubscription(
      this.rpc,
      this.hub,
      this.id,
      session.id,
      () => this.reopen(),
      { retry: this.retry, ...(this.options.initialPage ? { initialPage: this.options.initialPage } : {}) },
    );
    const entry: SessionEntry = { session, subscription };
    this.sessionsById.set(session.id, entry);
    subscription.onOps((ops) => this.opsEmitter.fire({ sessionId: session.id, ops }));
    subscription.onSyncState((state) => this.syncEmitter.fire({ sessionId: session.id, state }));
    if (info !== undefined) subscription.timeline.setRuntimeInfo(info);
    this.sessionEmitter.fire(entry);
    await subscription.start();
  }

  /** Opens the conversation again in a restarted runtime; concurrent callers share one request. */
  reopen(): Promise<void> {
    if (this.reopening === undefined) {
      this.reopening = withRetry(
        () => this.rpc.request("openvaala/openConversation", { conversationId: this.id }),
        this.retry,
      )
        .then((conversation) => {
          this.current = conversation;
        })
        .finally(() => {
          this.reopening = undefined;
        });
    }
    return this.reopening;
  }

  /** Re-establishes every subscription (after the connection or the runtime restarted). */
  resync(): Promise<void> {
    if (this.resyncing === undefined) {
      this.resyncing = this.runResync().finally(() => {
        this.resyncing = undefined;
      });
    }
    return this.resyncing;
  }

  private async runResync(): Promise<void> {
    let wait = this.retry.firstDelayMs;
    for (let attempt = 1; !this.disposed; attempt++) {
      try {
        const result = await this.subscribeConversation();
        if (result.title !== this.current.title) {
          this.current = { ...this.current, title: result.title };
          this.conversationEmitter.fire(this.current);
        }
        const known = new Set(this.sessionsById.keys());
        await Promise.all([
          ...result.sessions.filter((info) => !known.has(info.session.id)).map((info) => this.addSession(info.session, info)),
          ...[...this.sessionsById.values()].map((entry) => entry.subscription.resync("reconnect")),
        ]);
        for (const info of result.sessions) {
          const entry = this.sessionsById.get(info.session.id);
          if (entry) this.opsEmitter.fire({ sessionId: info.session.id, ops: entry.subscription.timeline.setRuntimeInfo(info) });
        }
        return;
      } catch (error) {
        if (this.disposed) return;
        const retryable = isTransient(error) || errorKind(error) === "conversationNotOpen";
        if (!retryable || attempt >= this.retry.attempts) throw error;
        await delay(wait);
        wait = Math.min(wait * 2, this.retry.maxDelayMs);
      }
    }
  }

  // Actions. Each request that a restart may cut is retried once the runtime is back: input
  // carries an `inputId`, so a retried submit never adds the input twice.

  private async act<T>(action: () => Promise<T>): Promise<T> {
    return withRetry(async () => {
      try {
        return await action();
      } catch (error) {
        if (errorKind(error) !== "conversationNotOpen") throw error;
        await this.reopen();
        return await action();
      }
    }, this.retry);
  }

  /** Sends input: with a turn running, `queue` waits for the next turn, `steer` joins the running
   * turn, `interrupt` stops it first. Returns the input's item id. */
  async submit(content: ContentInput[], mode: SessionInputMode = "queue"): Promise<string> {
    const inputId = newInputId();
    const result = await this.act(() =>
      this.rpc.request("openvaala/submitInput", { conversationId: this.id, content, inputId, mode }),
    );
    return result.itemId;
  }

  private activeTurnId(): string {
    const turnId = this.mainSession?.subscription.timeline.state.activeTurnId;
    if (turnId === undefined) throw new Error("no turn is running");
    return turnId;
  }

  /** Delivers a queued input into the running turn. */
  steer(itemId: string): Promise<unknown> {
    return this.act(() =>
      this.rpc.request("openvaala/steerInput", { conversationId: this.id, itemId, turnId: this.activeTurnId() }),
    );
  }

  /** Stops the running turn and runs this queued input next. */
  interruptWithInput(itemId: string): Promise<unknown> {
    return this.act(() =>
      this.rpc.request("openvaala/interruptTurnWithInput", {
        conversationId: this.id,
        itemId,
        turnId: this.activeTurnId(),
      }),
    );
  }

  /** Takes a queued input back; returns its text so the composer can show it again. */
  async withdraw(itemId: string): Promise<string> {
    const result = await this.act(() => this.rpc.request("openvaala/withdrawInput", { conversationId: this.id, itemId }));
    return result.items
      .flatMap((item) => item.content ?? [])
      .map((part) => (part.type === "text" ? (part.text ?? "") : ""))
      .join("");
  }

  async interrupt(): Promise<string> {
    return (await this.act(() => this.rpc.request("openvaala/interruptTurn", { conversationId: this.id }))).turnId;
  }

  /** Answers a tool call that waits, this conversation's main session's or a sub-agent's alike. */
  answerApproval(itemId: string, decision: ApprovalDecision, message?: string): Promise<unknown> {
    return this.act(() =>
      this.rpc.request("openvaala/answerApproval", {
        conversationId: this.id,
        itemId,
        decision,
        ...(message ? { message } : {}),
      }),
    );
  }

  async compact(): Promise<string> {
    return (await this.act(() => this.rpc.request("openvaala/compactContext", { conversationId: this.id }))).turnId;
  }

  /** A new conversation with this one's history up to and including `lastTurnId`. */
  fork(lastTurnId: string): Promise<Conversation> {
    return this.act(() => this.rpc.request("openvaala/forkConversation", { conversationId: this.id, lastTurnId }));
  }

  async setTitle(title: string): Promise<void> {
    await this.act(() => this.rpc.request("openvaala/setConversationTitle", { conversationId: this.id, title }));
    this.current = { ...this.current, title };
    this.conversationEmitter.fire(this.current);
  }

  async setArchived(archived: boolean): Promise<void> {
    this.current = await this.act(() =>
      this.rpc.request("openvaala/setConversationArchived", { conversationId: this.id, archived }),
    );
    this.conversationEmitter.fire(this.current);
  }

  async setModel(sessionId: string, model: ModelRef, reasoningEffort?: string): Promise<Session> {
    const session = await this.act(() =>
      this.rpc.request("openvaala/setSessionModel", {
        conversationId: this.id,
        sessionId,
        model: { model, ...(reasoningEffort ? { reasoningEffort } : {}) },
      }),
    );
    const entry = this.sessionsById.get(sessionId);
    if (entry) entry.session = session;
    return session;
  }

  /** What a turn changed in the workspace (checkpoint before it → after it, or now while it runs). */
  turnDiff(turnId: string): Promise<GetTurnDiffResult> {
    return this.act(() => this.rpc.request("openvaala/getTurnDiff", { conversationId: this.id, turnId }));
  }

  /** Puts the workspace back as it was before `turnId` (and every later turn); `force` overwrites
   * files changed since (else the runtime answers `conflict`). Reverting a revert's turn redoes. */
  async revertTurn(turnId: string, force = false): Promise<RevertTurnResult> {
    // not retried after a restart cut it: a revert that did happen must not happen twice
    const request = () =>
      this.rpc.request("openvaala/revertTurn", { conversationId: this.id, turnId, files: true, ...(force ? { force: true } : {}) });
    try {
      return await request();
    } catch (error) {
      if (errorKind(error) !== "conversationNotOpen") throw error;
      await this.reopen();
      return await request();
    }
  }

  /** The session's turns, newest first (how each ended: `status`, `reason`). */
  async turns(sessionId: string, limit = 100): Promise<Turn[]> {
    const page = await this.act(() =>
      this.rpc.request("openvaala/listTurns", { conversationId: this.id, sessionId, order: "desc", limit }),
    );
    return page.items;
  }

  contextUsage(sessionId: string): Promise<SessionContextUsage> {
    return this.act(() =>
      this.rpc.request("openvaala/getSessionContextUsage", { conversationId: this.id, sessionId }),
    );
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.conversationAttached?.dispose();
    if (this.conversationSubscription !== undefined) {
      void this.rpc
        .request("openvaala/unsubscribe", { subscriptionId: this.conversationSubscription })
        .catch(() => undefined);
    }
    for (const entry of this.sessionsById.values()) entry.subscription.dispose();
    this.sessionsById.clear();
    this.disposeEmitter.fire();
    for (const emitter of [
      this.opsEmitter,
      this.conversationEmitter,
      this.sessionEmitter,
      this.syncEmitter,
      this.closedEmitter,
      this.disposeEmitter,
    ]) {
      emitter.dispose();
    }
  }
}
