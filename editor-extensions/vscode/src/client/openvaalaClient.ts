// The protocol client of one `openvaala-lsp` connection: typed requests, subscription routing,
// the running-conversations set, open conversations, and recovery after a runtime restart.
// No `vscode` import: the extension and the Node tests use it alike.
import type { RpcConnection } from "./connection";
import { OpenConversation, type ConversationOptions } from "./conversation";
import { Emitter, type Disposable } from "./emitter";
import { RESUBSCRIBE_KINDS } from "../protocol/errors";
import type {
  AgentInfo,
  Conversation,
  ConversationListEntryPage,
  CreateConversationParams,
  ListConversationsParams,
  ModelList,
  QueryResult,
} from "../protocol/generated";
import { OpenvaalaRpc, serverFeatures, type Method, type ServerFeatures } from "./rpc";
import { DEFAULT_RETRY, delay, isTransient, withRetry, type RetryPolicy } from "./retry";
import { SubscriptionHub } from "./subscriptions";

/** Methods that the chat view offers as actions; each is hidden while the server lacks it. */
export const OPTIONAL_METHODS = [
  "openvaala/forkConversation",
  "openvaala/compactContext",
  "openvaala/answerApproval",
  "openvaala/setSessionModel",
  "openvaala/query",
  "openvaala/steerInput",
  "openvaala/interruptTurnWithInput",
  "openvaala/withdrawInput",
  "openvaala/setConversationArchived",
  "openvaala/deleteConversation",
  "openvaala/setConversationTitle",
  "openvaala/listAgents",
  "openvaala/listModels",
  "openvaala/getTurnDiff",
  "openvaala/revertTurn",
  "openvaala/listTurns",
] as const satisfies readonly Method[];

export interface ClientOptions extends ConversationOptions {
  retry?: RetryPolicy;
  /** The clientId this connection sent at initialize (initializationOptions.openvaala.clientId). */
  clientId?: string;
}

export class OpenvaalaClient implements Disposable {
  readonly rpc: OpenvaalaRpc;
  readonly hub: SubscriptionHub;
  private readonly runningEmitter = new Emitter<ReadonlySet<string>>();
  private readonly restartEmitter = new Emitter<void>();
  /** The set of conversations with a running turn changed. */
  readonly onRunning = this.runningEmitter.event;
  /** The runtime restarted under us (a request failed with runtimeStopped); subscriptions recover by themselves. */
  readonly onRuntimeRestart = this.restartEmitter.event;
  private running = new Set<string>();
  private runningSubscription: string | undefined;
  private runningAttached: Disposable | undefined;
  private runningSync: Promise<void> | undefined;
  private readonly conversations = new Set<OpenConversation>();
  private readonly retry: RetryPolicy;
  private disposed = false;

  constructor(
    connection: RpcConnection,
    initializeResult: unknown,
    private readonly options: ClientOptions = {},
  ) {
    this.rpc = new OpenvaalaRpc(connection, serverFeatures(initializeResult));
    this.hub = new SubscriptionHub(this.rpc);
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.rpc.onDidFail(({ error }) => {
      if (error.kind === "runtimeStopped") this.restartEmitter.fire();
    });
  }

  get features(): ServerFeatures {
    return this.rpc.features;
  }

  /** This connection's id as the runtime knows it (`by.clientId` of what it answered). */
  get clientId(): string | undefined {
    return this.options.clientId;
  }

  supports(method: Method): boolean {
    return this.rpc.supports(method);
  }

  /** Which of the optional actions this server answers. */
  supportedActions(): string[] {
    return OPTIONAL_METHODS.filter((method) => this.supports(method));
  }

  get runningConversations(): ReadonlySet<string> {
    return this.running;
  }

  /** Follows the set of running conversations (and again after every restart). */
  watchRunning(): Promise<void> {
    if (this.runningSync === undefined) {
      this.runningSync = this.subscribeRunning().finally(() => {
        this.runningSync = undefined;
      });
    }
    return this.runningSync;
  }

  private async subscribeRunning(): Promise<void> {
    let wait = this.retry.firstDelayMs;
    for (let attempt = 1; !this.disposed; attempt++) {
      try {
        this.runningAttached?.dispose();
        const result = await this.rpc.request("openvaala/subscribeRunningConversations", {});
        this.runningSubscription = result.subscriptionId;
        this.runningAttached = this.hub.attach(result.subscriptionId, {
          message: (message) => {
            if (message.method === "openvaala/runningConversations") this.setRunning(message.params.conversationIds);
          },
          closed: (reason) => {
            this.runningSubscription = undefined;
            if (!this.disposed && RESUBSCRIBE_KINDS.has(reason.kind)) void this.watchRunning();
          },
          gap: () => {
            void this.watchRunning();
          },
        });
        this.setRunning(result.initial.conversationIds);
        return;
      } catch (error) {
        if (!isTransient(error) || attempt >= this.retry.attempts) throw error;
        await delay(wait);
        wait = Math.min(wait * 2, this.retry.maxDelayMs);
      }
    }
  }

  private setRunning(ids: readonly string[]): void {
    this.running = new Set(ids);
    this.runningEmitter.fire(this.running);
  }

  listConversations(params: ListConversationsParams): Promise<ConversationListEntryPage> {
    return withRetry(() => this.rpc.request("openvaala/listConversations", params), this.retry);
  }

  createConversation(params: CreateConversationParams = {}): Promise<Conversation> {
    return withRetry(() => this.rpc.request("openvaala/createConversation", params), this.retry);
  }

  async open(conversationId: string): Promise<OpenConversation> {
    const conversation = await OpenConversation.open(this.rpc, this.hub, conversationId, this.options);
    this.conversations.add(conversation);
    conversation.onDidDispose(() => this.conversations.delete(conversation));
    return conversation;
  }

  async deleteConversation(conversationId: string): Promise<void> {
    await withRetry(() => this.rpc.request("openvaala/deleteConversation", { conversationId }), this.retry);
  }

  async setArchived(conversationId: string, archived: boolean): Promise<Conversation> {
    return withRetry(
      () => this.rpc.request("openvaala/setConversationArchived", { conversationId, archived }),
      this.retry,
    );
  }

  async setTitle(conversationId: string, title: string): Promise<void> {
    await withRetry(() => this.rpc.request("openvaala/setConversationTitle", { conversationId, title }), this.retry);
  }

  async agents(): Promise<AgentInfo[]> {
    return (await withRetry(() => this.rpc.request("openvaala/listAgents", {}), this.retry)).agents;
  }

  models(agentName?: string): Promise<ModelList> {
    return withRetry(() => this.rpc.request("openvaala/listModels", agentName ? { agentName } : {}), this.retry);
  }

  query(sql: string, parameters?: unknown[], limit?: number): Promise<QueryResult> {
    return withRetry(
      () =>
        this.rpc.request("openvaala/query", {
          sql,
          ...(parameters ? { parameters } : {}),
          ...(limit ? { limit } : {}),
        }),
      this.retry,
    );
  }

  /** The connection itself was restarted (the editor restarted the server process): every
   * subscription is gone without a `subscriptionClosed`, so establish them all again. */
  async reconnected(initializeResult?: unknown): Promise<void> {
    if (initializeResult !== undefined) this.rpc.updateFeatures(serverFeatures(initializeResult));
    await Promise.all([
      this.runningSubscription !== undefined || this.running.size > 0 ? this.watchRunning() : Promise.resolve(),
      ...[...this.conversations].map((conversation) => conversation.resync()),
    ]);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const conversation of [...this.conversations]) conversation.dispose();
    this.runningAttached?.dispose();
    if (this.runningSubscription !== undefined) {
      void this.rpc.request("openvaala/unsubscribe", { subscriptionId: this.runningSubscription }).catch(() => undefined);
    }
    this.hub.dispose();
    this.rpc.dispose();
    this.runningEmitter.dispose();
    this.restartEmitter.dispose();
  }
}
