// The chat view's logic, between its webview and the protocol client. It has no `vscode` import:
// what needs the editor (dialogs, terminals, the webview itself) comes in through `ChatUi`, and the
// connection per workspace folder through `ClientProvider`.
import type { OpenConversation } from "../client/conversation";
import { DisposableStore, Emitter, type Disposable, type Event } from "../client/emitter";
import type { OpenvaalaClient } from "../client/openvaalaClient";
import type { SandboxState } from "../client/rpc";
import { ProtocolError, toProtocolError } from "../protocol/errors";
import type {
  AgentInfo,
  ApprovalDecision,
  ContentInput,
  ContextUsage,
  Conversation,
  FileChange,
  GetTurnDiffResult,
  SessionContextUsage,
  SessionInputMode,
  Turn,
} from "../protocol/generated";
import type { TimelineOp } from "../client/timeline";
import { contextLabel, contextPart, rankMentions } from "../shared/context";
import { diffTexts } from "../shared/unifiedDiff";
import type {
  ConnectionStatus,
  ContextRef,
  TurnFile,
  TurnInfo,
  FixAction,
  FolderInfo,
  HostCommand,
  HostMessage,
  ListFilter,
  ViewMessage,
} from "../shared/messages";

export interface ChatUi {
  post(message: HostMessage): void;
  confirm(message: string, confirmLabel: string): Promise<boolean>;
  input(prompt: string, value: string): Promise<string | undefined>;
  pickAgent(agents: AgentInfo[]): Promise<AgentInfo | undefined>;
  runCommand(command: HostCommand): void;
  openLink(href: string): void;
  /** VS Code's diff editor on two texts (virtual documents), titled `title`. */
  showDiff(diff: DiffView): Promise<void>;
  /** Opens a file (absolute, or relative to the folder) at a line (1-based). */
  openFile(folder: string | undefined, path: string, line?: number): Promise<void>;
  /** A file's text now (the editor's unsaved text when open), or undefined when it cannot be read. */
  readFile(folder: string | undefined, path: string): Promise<string | undefined>;
  /** The folder's files, relative to it (for the @-mention completion). */
  workspaceFiles(folder: string | undefined): Promise<string[]>;
}

/** What the diff editor shows for one file of a turn. */
export interface DiffView {
  title: string;
  path: string;
  before: string;
  after: string;
  /** Why the sides are not the whole file (shown in the editor's title and as a message). */
  note?: string;
}

export interface ClientProvider {
  folders(): FolderInfo[];
  /** The folder's connection, started on first use; rejects with a message (and fix) when it cannot start. */
  client(folder: string): Promise<OpenvaalaClient>;
  status(folder: string): ConnectionStatus;
  /** A folder's connection changed (started, restarted, failed). */
  readonly onDidChangeStatus: Event<{ folder: string; status: ConnectionStatus }>;
  /** A folder's connection was restarted: subscriptions must be established again. */
  readonly onDidRestart: Event<{ folder: string; client: OpenvaalaClient }>;
}

/** A failure the user can fix, e.g. no server found. */
export class FixableError extends Error {
  constructor(
    message: string,
    readonly fix?: FixAction,
  ) {
    super(message);
  }
}

/** A connected client's status for the view: versions, the sandbox, and its clientId. */
export function readyStatus(client: OpenvaalaClient): ConnectionStatus {
  const features = client.features;
  return {
    state: "ready",
    serverVersion: features.serverVersion,
    protocolVersion: features.protocolVersion,
    ...(features.sandbox ? { sandbox: features.sandbox } : {}),
    ...(client.clientId ? { clientId: client.clientId } : {}),
  };
}

export interface ContextSummary {
  conversationTitle: string;
  context?: ContextUsage;
  thresholdTokens?: number;
  running: boolean;
  sandbox?: SandboxState;
}

const PAGE = 50;

export class ChatController implements Disposable {
  private folder: string | undefined;
  private filter: ListFilter = { query: "", archived: false };
  private open: OpenConversation | undefined;
  private openStore = new DisposableStore();
  private readonly store = new DisposableStore();
  private readonly contextEmitter = new Emitter<ContextSummary | undefined>();
  /** The open conversation's context usage (for the status bar), or undefined when none is open. */
  readonly onContext = this.contextEmitter.event;
  private thresholds = new Map<string, number>();
  private watchedClient: OpenvaalaClient | undefined;
  private clientStore = new DisposableStore();
  private listRefresh: ReturnType<typeof setTimeout> | undefined;
  /** The open conversation's turns as the view knows them (how they ended, files, undone). */
  private turnInfo = new Map<string, TurnInfo>();
  private turnDiffs = new Map<string, GetTurnDiffResult>();
  /** "No model is configured" is said once (until a model shows up or the connection restarts). */
  private noModelSaid = false;

  constructor(
    private readonly ui: ChatUi,
    private readonly clients: ClientProvider,
  ) {
    this.store.add(
      clients.onDidChangeStatus(({ folder, status }) => {
        if (folder !== this.folder) return;
        this.post({ type: "connection", folder, connection: status, actions: this.actions() });
      }),
    );
    this.store.add(
      clients.onDidRestart(({ folder, client }) => {
        if (folder !== this.folder) return;
        const replaced = this.watchedClient !== client;
        this.watchClient(client);
        this.post({ type: "connection", folder, connection: clients.status(folder), actions: this.actions() });
        // the same client renews its own subscriptions; a new one must open the conversation again
        if (replaced && this.open) void this.openById(this.open.id).catch((error: unknown) => this.fail(error));
        else this.refreshList();
      }),
    );
  }

  get openConversation(): OpenConversation | undefined {
    return this.open;
  }

  private post(message: HostMessage): void {
    this.ui.post(message);
  }

  private actions(): string[] {
    return this.watchedClient?.supportedActions() ?? [];
  }

  /** Handles one message from the webview; errors become notices in the view. */
  async handle(message: ViewMessage): Promise<void> {
    try {
      await this.dispatch(message);
    } catch (error) {
      this.fail(error);
    }
  }

  private async dispatch(message: ViewMessage): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.ready();
      case "selectFolder":
        this.folder = message.folder;
        this.closeConversation();
        return this.ready();
      case "list":
        this.filter = message.filter;
        return this.list(message.cursor);
      case "open":
        return this.openById(message.conversationId);
      case "back":
        this.closeConversation();
        this.post({ type: "closed" });
        return this.list();
      case "create":
        return this.create();
      case "submit":
        return this.submit(message.content, message.mode, message.context ?? []);
      case "steer":
        await this.require().steer(message.itemId);
        return;
      case "sendNow":
        await this.require().interruptWithInput(message.itemId);
        return;
      case "withdraw": {
        const text = await this.require().withdraw(message.itemId);
        if (text) this.post({ type: "composer", text });
        return;
      }
      case "interrupt":
        await this.require().interrupt();
        return;
      case "approval":
        return this.answerApproval(message.itemId, message.decision, message.message);
      case "fork": {
        const fork = await this.require().fork(message.turnId);
        await this.openById(fork.id);
        return;
      }
      case "compact":
        await this.require().compact();
        return;
      case "rename":
        return this.rename(message.conversationId);
      case "archive":
        return this.archive(message.conversationId, message.archived);
      case "delete":
        return this.delete(message.conversationId);
      case "setModel": {
        const session = await this.require().setModel(message.sessionId, message.model);
        this.post({ type: "sessionModel", sessionId: session.id, ...(session.model.model ? { model: session.model.model } : {}) });
        await this.refreshContext(message.sessionId);
        return;
      }
      case "loadEarlier":
        await this.require().session(message.sessionId)?.subscription.loadEarlier();
        return;
      case "refreshContext":
        return this.refreshContext(message.sessionId);
      case "openLink":
        this.ui.openLink(message.href);
        return;
      case "command":
        this.ui.runCommand(message.command);
        return;
      case "openDiff":
        return this.openDiff(message.turnId, message.path);
      case "revertTurn":
        return this.revert(message.turnId, message.force === true, message.redo === true);
      case "openFile":
        return this.ui.openFile(this.folder, message.path, message.line);
      case "mentionQuery":
        return this.mentions(message.requestId, message.query);
      default:
        return;
    }
  }

  private require(): OpenConversation {
    if (this.open === undefined) throw new Error("no conversation is open");
    return this.open;
  }

  private async client(): Promise<OpenvaalaClient> {
    const folder = this.folder;
    if (folder === undefined) throw new FixableError("Open a folder to chat with openvaala about it.");
    const client = await this.clients.client(folder);
    this.watchClient(client);
    return client;
  }

  private watchClient(client: OpenvaalaClient): void {
    if (this.watchedClient === client) return;
    this.clientStore.dispose();
    this.clientStore = new DisposableStore();
    this.watchedClient = client;
    this.clientStore.add(
      client.onRunning((ids) => {
        this.post({ type: "running", conversationIds: [...ids] });
        this.scheduleListRefresh();
      }),
    );
    void client.watchRunning().catch((error: unknown) => this.fail(error));
  }

  private async ready(): Promise<void> {
    const folders = this.clients.folders();
    if (this.folder === undefined || !folders.some((f) => f.key === this.folder)) this.folder = folders[0]?.key;
    const connection: ConnectionStatus =
      this.folder === undefined ? { state: "failed", message: "Open a folder to use openvaala." } : this.clients.status(this.folder);
    this.post({
      type: "init",
      folders,
      ...(this.folder !== undefined ? { folder: this.folder } : {}),
      connection,
      actions: this.actions(),
    });
    if (this.folder === undefined) return;
    const client = await this.client();
    this.post({ type: "connection", folder: this.folder, connection: this.clients.status(this.folder), actions: this.actions() });
    this.post({ type: "running", conversationIds: [...client.runningConversations] });
    void this.checkModels(client);
    if (this.open !== undefined) {
      this.replayOpen(this.open);
      return;
    }
    await this.list();
  }

  /** Says so, with the fix, when no model is configured (before the first message fails). */
  private async checkModels(client: OpenvaalaClient): Promise<void> {
    if (!client.supports("openvaala/listModels")) return;
    try {
      const list = await client.models();
      if (list.models.length === 0) this.fail(new ProtocolError("no model is configured", -32013, "noModelConfigured"));
      else this.noModelSaid = false;
    } catch {
      // the list is a courtesy; a real failure shows on the next request
    }
  }

  get folderKey(): string | undefined {
    return this.folder;
  }

  private async list(cursor?: string): Promise<void> {
    const client = await this.client();
    const page = await client.listConversations({
      limit: PAGE,
      order: "desc",
      archived: this.filter.archived,
      ...(this.filter.query.trim() ? { query: this.filter.query.trim() } : {}),
      ...(cursor ? { cursor } : {}),
    });
    this.post({
      type: "conversations",
      entries: page.items,
      running: [...client.runningConversations],
      filter: this.filter,
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      append: cursor !== undefined,
    });
  }

  private refreshList(): void {
    if (this.open === undefined) void this.list().catch((error: unknown) => this.fail(error));
  }

  /** Running conversations change order and state in the list: refresh it, at most every 500 ms. */
  private scheduleListRefresh(): void {
    if (this.listRefresh !== undefined) return;
    this.listRefresh = setTimeout(() => {
      this.listRefresh = undefined;
      this.refreshList();
    }, 500);
  }

  private async create(): Promise<void> {
    const client = await this.client();
    let agentName: string | undefined;
    if (client.supports("openvaala/listAgents")) {
      const agents = await client.agents();
      if (agents.length > 1) {
        const agent = await this.ui.pickAgent(agents);
        if (agent === undefined) return;
        agentName = agent.name;
      }
    }
    const conversation = await client.createConversation(agentName ? { agentName } : {});
    await this.openById(conversation.id);
  }

  async openById(conversationId: string): Promise<void> {
    const client = await this.client();
    this.closeConversation();
    const open = await client.open(conversationId);
    this.open = open;
    const store = new DisposableStore();
    this.openStore = store;
    store.add(open.onOps(({ sessionId, ops }) => {
      this.post({ type: "ops", sessionId, ops });
      if (sessionId === open.mainSession?.session.id) this.onMainOps(open, ops);
      if (ops.some((op) => op.op === "status" || op.op === "turn")) this.emitContext();
      if (ops.some((op) => op.op === "turn" && op.phase === "completed")) void this.refreshContext(sessionId).catch(() => undefined);
    }));
    store.add(open.onConversation((conversation) => {
      this.post({ type: "conversation", conversation });
      this.emitContext();
    }));
    store.add(open.onSessionAdded((entry) => {
      this.post({
        type: "session",
        session: entry.session,
        ...this.anchorOf(open, entry.session.createdAt, entry.session.parentSessionId),
        snapshot: entry.subscription.timeline.snapshot(),
      });
    }));
    let resyncing = false;
    store.add(open.onSyncState(({ sessionId, state }) => {
      this.post({ type: "sync", sessionId, state });
      if (sessionId !== open.mainSession?.session.id) return;
      // back after a restart: the turn the runtime lost ended `interrupted` (reason runtimeStopped)
      // while nobody watched; its partial answer came back as saved; say how its turns ended
      if (state.state === "resyncing") resyncing = true;
      else if (state.state === "live" && resyncing) {
        resyncing = false;
        void this.loadTurns(open).catch(() => undefined);
      }
    }));
    store.add(open.onClosed((reason) => {
      this.post({ type: "notice", level: "warning", message: `The conversation closed: ${reason.message}` });
    }));
    this.turnInfo = new Map();
    this.turnDiffs = new Map();
    this.replayOpen(open);
    void this.sendModels(client, open.conversation.agentName);
    const main = open.mainSession;
    if (main) await this.refreshContext(main.session.id).catch(() => undefined);
    void this.loadTurns(open).catch(() => undefined);
  }

  // Turns: how each ended, what it changed (its files under it, each opening a diff), undo and redo.

  private postTurns(open: OpenConversation, turns: TurnInfo[]): void {
    const main = open.mainSession;
    if (!main || turns.length === 0 || this.open !== open) return;
    this.post({ type: "turnInfo", sessionId: main.session.id, turns });
  }

  private mergeTurn(update: TurnInfo): TurnInfo {
    const merged: TurnInfo = { ...this.turnInfo.get(update.turnId), ...update };
    this.turnInfo.set(update.turnId, merged);
    return merged;
  }

  private static turnUpdate(turn: Turn): TurnInfo {
    return { turnId: turn.id, status: turn.status, ...(turn.reason ? { reason: turn.reason } : {}) };
  }

  /** On open: how the main session's turns ended, and the files of those that changed some. */
  private async loadTurns(open: OpenConversation): Promise<void> {
    const main = open.mainSession;
    if (!main) return;
    const client = this.watchedClient;
    const updates: TurnInfo[] = [];
    if (client?.supports("openvaala/listTurns")) {
      for (const turn of await open.turns(main.session.id, 200)) updates.push(this.mergeTurn(ChatController.turnUpdate(turn)));
    }
    // the files each turn's tool results reported, until the turn's own diff comes
    const changed = new Map<string, Map<string, TurnFile>>();
    for (const { item } of main.subscription.timeline.snapshot().items) {
      const changes = item.toolResult?.fileChanges;
      if (!item.turnId || !changes?.length) continue;
      const files = changed.get(item.turnId) ?? new Map<string, TurnFile>();
      changed.set(item.turnId, files);
      for (const change of changes) {
        const known = files.get(change.path);
        files.set(change.path, {
          ...summaryOf(change),
          additions: (known?.additions ?? 0) + change.additions,
          deletions: (known?.deletions ?? 0) + change.deletions,
        });
      }
    }
    for (const [turnId, files] of changed) {
      if (!this.turnInfo.get(turnId)?.files) updates.push(this.mergeTurn({ turnId, files: [...files.values()] }));
    }
    this.postTurns(open, updates);
    if (!client?.supports("openvaala/getTurnDiff")) return;
    const recent = [...changed.keys()].slice(-20);
    for (const turnId of recent.reverse()) {
      if (this.open !== open) return;
      await this.refreshTurnDiff(open, turnId).catch(() => undefined);
    }
  }

  private async refreshTurnDiff(open: OpenConversation, turnId: string): Promise<GetTurnDiffResult> {
    const diff = await open.turnDiff(turnId);
    this.turnDiffs.set(turnId, diff);
    this.postTurns(open, [this.mergeTurn({ turnId, files: diff.files.map(summaryOf), complete: diff.complete })]);
    return diff;
  }

  private onMainOps(open: OpenConversation, ops: readonly TimelineOp[]): void {
    const updates: TurnInfo[] = [];
    for (const op of ops) {
      if (op.op === "turnFiles") {
        this.turnDiffs.delete(op.turnId);
        updates.push(this.mergeTurn({ turnId: op.turnId, files: op.files.map((file) => ({ ...file })) }));
      } else if (op.op === "turn") {
        updates.push(this.mergeTurn(ChatController.turnUpdate(op.turn)));
        if (op.phase === "completed" && this.turnInfo.get(op.turn.id)?.files && this.watchedClient?.supports("openvaala/getTurnDiff")) {
          this.turnDiffs.delete(op.turn.id);
          void this.refreshTurnDiff(open, op.turn.id).catch(() => undefined);
        }
      }
    }
    this.postTurns(open, updates);
  }

  /** The diff editor on one file of a turn: before ↔ after, the before text rebuilt from the turn's
   * diff on the file as it is now (else the turn's hunks alone, saying so). */
  private async openDiff(turnId: string, path: string): Promise<void> {
    const open = this.require();
    const diff = this.turnDiffs.get(turnId) ?? (await this.refreshTurnDiff(open, turnId));
    const change = diff.files.find((file) => file.path === path);
    if (!change) throw new Error(`The turn's diff has no ${path} (any more).`);
    const current = change.kind === "delete" ? undefined : await this.ui.readFile(this.folder, change.path);
    const texts = diffTexts(change, current);
    const name = change.path.slice(change.path.lastIndexOf("/") + 1);
    const label = change.kind === "add" ? "added" : change.kind === "delete" ? "deleted" : change.kind === "move" ? "moved" : "changed";
    await this.ui.showDiff({
      title: `${name} (${label} by the turn)${texts.whole ? "" : " · hunks only"}`,
      path: change.path,
      before: texts.before,
      after: texts.after,
      ...(texts.note ? { note: texts.note } : {}),
    });
  }

  /** Undo (revert `turnId` and every later turn) or redo (revert the revert `turnId`). A refusal
   * because files changed since comes back to the view in the runtime's words, with the files. */
  private async revert(turnId: string, force: boolean, redo: boolean): Promise<void> {
    const open = this.require();
    let result;
    try {
      result = await open.revertTurn(turnId, force);
    } catch (error) {
      const protocolError = toProtocolError(error);
      if (protocolError.kind === "conflict") {
        const data = protocolError.data as { files?: FileChange[] } | undefined;
        const files = Array.isArray(data?.files) ? data.files.map(summaryOf) : [];
        this.post({ type: "revertConflict", turnId, redo, message: protocolError.message, files });
        return;
      }
      this.post({ type: "revertDone", turnId });
      throw error;
    }
    const updates: TurnInfo[] = [];
    if (redo) {
      for (const info of this.turnInfo.values()) {
        if (info.undoneBy === turnId) {
          const rest: TurnInfo = { ...info };
          delete rest.undoneBy;
          this.turnInfo.set(info.turnId, rest);
          updates.push({ ...rest, undoneBy: "" });
        }
      }
    } else if (result.revertedBy) {
      for (const id of result.revertedTurnIds) updates.push(this.mergeTurn({ turnId: id, undoneBy: result.revertedBy }));
    }
    this.postTurns(open, updates);
    this.post({ type: "revertDone", turnId });
    const files = result.files.length;
    const what = redo ? "Redone" : `Undone${result.revertedTurnIds.length > 1 ? ` (${result.revertedTurnIds.length} turns)` : ""}`;
    this.post({ type: "notice", level: "info", message: `${what}: ${files} ${files === 1 ? "file" : "files"} restored.` });
  }

  /** Input with the editor's context: each file or selection a text part naming its path and lines. */
  private async submit(content: ContentInput[], mode: SessionInputMode, context: ContextRef[]): Promise<void> {
    const open = this.require();
    const parts: ContentInput[] = [...content];
    const missing: string[] = [];
    for (const ref of context) {
      let text = ref.text;
      let total: number | undefined;
      if (text === undefined) {
        // a typed @-mention counts only for a file inside the folder
        if (ref.optional && (ref.path.startsWith("/") || ref.path.split("/").includes(".."))) continue;
        const whole = await this.ui.readFile(this.folder, ref.uri ?? ref.path);
        if (whole === undefined) {
          if (!ref.optional) missing.push(ref.path);
          continue;
        }
        const lines = whole.split("\n");
        total = lines.length - (whole.endsWith("\n") ? 1 : 0);
        text = ref.startLine !== undefined ? lines.slice(ref.startLine - 1, ref.endLine ?? ref.startLine).join("\n") : whole;
      }
      parts.push({ type: "text", text: contextPart(ref, text, total) });
    }
    if (missing.length > 0) {
      throw new Error(`Not sent: cannot read ${missing.map((path) => contextLabel({ path })).join(", ")}.`);
    }
    await open.submit(parts, mode);
  }

  private mentionFiles: { folder: string | undefined; at: number; files: Promise<string[]> } | undefined;

  /** The @-mention completion: the folder's files (listed at most every 10 s), ranked by the query. */
  private async mentions(requestId: number, query: string): Promise<void> {
    const now = Date.now();
    if (!this.mentionFiles || this.mentionFiles.folder !== this.folder || now - this.mentionFiles.at > 10_000) {
      this.mentionFiles = { folder: this.folder, at: now, files: this.ui.workspaceFiles(this.folder) };
    }
    const files = await this.mentionFiles.files;
    this.post({ type: "mentions", requestId, query, items: rankMentions(files, query) });
  }

  /** Sends everything about the open conversation (on open, and when the webview reloads). */
  private replayOpen(open: OpenConversation): void {
    const main = open.mainSession;
    this.post({ type: "opened", conversation: open.conversation, mainSessionId: main?.session.id ?? "" });
    const sessions = [...open.sessions].sort((a, b) => (a.session.parentSessionId ? 1 : 0) - (b.session.parentSessionId ? 1 : 0));
    for (const entry of sessions) {
      this.post({
        type: "session",
        session: entry.session,
        ...this.anchorOf(open, entry.session.createdAt, entry.session.parentSessionId),
        snapshot: entry.subscription.timeline.snapshot(),
      });
    }
    for (const entry of sessions) this.post({ type: "sync", sessionId: entry.session.id, state: entry.subscription.syncState });
    if (this.open === open) this.postTurns(open, [...this.turnInfo.values()]);
    this.emitContext();
  }

  /** Where a sub-agent session goes in its parent's timeline: after the parent's last item created before it. */
  private anchorOf(open: OpenConversation, createdAt: string, parentSessionId?: string): { anchor?: number } {
    if (!parentSessionId) return {};
    const parent = open.session(parentSessionId);
    if (!parent) return {};
    let anchor: number | undefined;
    for (const logged of parent.subscription.timeline.snapshot().items) {
      if (logged.item.createdAt <= createdAt) anchor = logged.ordinal;
    }
    return anchor === undefined ? {} : { anchor };
  }

  private async sendModels(client: OpenvaalaClient, agentName: string): Promise<void> {
    if (!client.supports("openvaala/listModels")) return;
    try {
      const list = await client.models(agentName);
      this.post({ type: "models", models: list.models, ...(list.agentDefaultModel ? { agentDefault: list.agentDefaultModel } : {}) });
    } catch (error) {
      this.fail(error);
    }
  }

  private async refreshContext(sessionId: string): Promise<void> {
    const open = this.open;
    if (!open) return;
    const usage: SessionContextUsage = await open.contextUsage(sessionId);
    this.thresholds.set(sessionId, usage.thresholdTokens);
    this.post({ type: "contextUsage", sessionId, usage });
    this.emitContext();
  }

  private emitContext(): void {
    const open = this.open;
    const main = open?.mainSession;
    if (!open || !main) {
      this.contextEmitter.fire(undefined);
      return;
    }
    const state = main.subscription.timeline.state;
    const threshold = this.thresholds.get(main.session.id);
    this.contextEmitter.fire({
      conversationTitle: open.conversation.title,
      ...(state.context ? { context: state.context } : {}),
      ...(threshold !== undefined ? { thresholdTokens: threshold } : {}),
      running: state.state === "running" || state.state === "compacting",
      ...(this.watchedClient?.features.sandbox ? { sandbox: this.watchedClient.features.sandbox } : {}),
    });
  }

  /** Answers an approval prompt. The first answer of any window wins: a later one (`invalidState`)
   * or one for a prompt that is gone (`notFound`) is said quietly on the card, not as an error. */
  private async answerApproval(itemId: string, decision: ApprovalDecision, text?: string): Promise<void> {
    const open = this.require();
    try {
      await open.answerApproval(itemId, decision, text?.trim() || undefined);
    } catch (error) {
      const protocolError = toProtocolError(error);
      if (protocolError.kind === "invalidState") {
        this.post({ type: "approvalAnswer", itemId, outcome: "late", message: "Another window answered first." });
        return;
      }
      if (protocolError.kind === "notFound") {
        this.post({ type: "approvalAnswer", itemId, outcome: "gone", message: "This call no longer waits for an answer." });
        return;
      }
      this.post({ type: "approvalAnswer", itemId, outcome: "failed", message: protocolError.message });
      throw error;
    }
  }

  private async rename(conversationId: string): Promise<void> {
    const client = await this.client();
    const current = this.open?.id === conversationId ? this.open.conversation.title : "";
    const title = await this.ui.input("Conversation title", current);
    if (title === undefined) return;
    if (this.open?.id === conversationId) await this.open.setTitle(title);
    else await client.setTitle(conversationId, title);
    this.refreshList();
  }

  private async archive(conversationId: string, archived: boolean): Promise<void> {
    const client = await this.client();
    const conversation: Conversation =
      this.open?.id === conversationId
        ? (await this.open.setArchived(archived), this.open.conversation)
        : await client.setArchived(conversationId, archived);
    if (this.open?.id === conversationId) this.post({ type: "conversation", conversation });
    this.refreshList();
  }

  private async delete(conversationId: string): Promise<void> {
    const client = await this.client();
    const ok = await this.ui.confirm(
      "Delete this conversation and its whole history? This cannot be undone.",
      "Delete",
    );
    if (!ok) return;
    if (this.open?.id === conversationId) {
      this.closeConversation();
      this.post({ type: "closed" });
    }
    await client.deleteConversation(conversationId);
    await this.list();
  }

  private closeConversation(): void {
    this.openStore.dispose();
    this.open?.dispose();
    this.open = undefined;
    this.emitContext();
  }

  /** Shows a failure in the view, with a fix where there is one. */
  fail(error: unknown): void {
    if (error instanceof FixableError) {
      this.post({ type: "notice", level: "error", message: error.message, ...(error.fix ? { fix: error.fix } : {}) });
      return;
    }
    const protocolError: ProtocolError = toProtocolError(error);
    switch (protocolError.kind) {
      case "noModelConfigured":
        if (this.noModelSaid) return;
        this.noModelSaid = true;
        this.post({
          type: "notice",
          level: "error",
          message: "No model is configured. Set one up with `openvaala setup` (it asks for the provider and checks it).",
          fix: { label: "Set up a model", command: "setup" },
        });
        return;
      case "methodNotFound":
        this.post({ type: "notice", level: "warning", message: `This openvaala server does not support that yet (${protocolError.message}).` });
        return;
      case "runtimeStopped":
      case "connection":
        this.post({
          type: "notice",
          level: "warning",
          message: `The openvaala runtime is not reachable: ${protocolError.message}`,
          fix: { label: "Restart the server", command: "restart" },
        });
        return;
      default:
        this.post({ type: "notice", level: "error", message: protocolError.message });
    }
  }

  dispose(): void {
    if (this.listRefresh !== undefined) clearTimeout(this.listRefresh);
    this.closeConversation();
    this.clientStore.dispose();
    this.store.dispose();
    this.contextEmitter.dispose();
  }
}

/** A FileChange as the list under its turn shows it (no diff). */
function summaryOf(change: { path: string; kind: string; additions: number; deletions: number; movedFrom?: string; binary?: boolean }): TurnFile {
  return {
    path: change.path,
    kind: change.kind,
    additions: change.additions,
    deletions: change.deletions,
    ...(change.movedFrom ? { movedFrom: change.movedFrom } : {}),
    ...(change.binary ? { binary: true } : {}),
  };
}
