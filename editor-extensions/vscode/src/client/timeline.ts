// The state of one session as the editor shows it, built from `subscribeSession` snapshots,
// `listItems` pages and session events (the snapshot + stream rule of PROTOCOL.md §3). Pure: no
// I/O. Every change is also returned as a list of `TimelineOp`s, which the chat view applies
// incrementally (a delta appends text; nothing re-renders the whole conversation).
import type {
  Address,
  ApprovalDecision,
  ApprovalRequest,
  ContextUsage,
  ErrorInfo,
  FileChangeSummary,
  Item,
  LoggedItem,
  PendingApproval,
  SessionState,
  StreamingItem,
  SubscribeSessionResult,
  TokenUsage,
  SessionEvent,
  Turn,
} from "../protocol/generated";

export interface PendingInput {
  item: Item;
  mode: string;
  turnId?: string;
}

/** A tool call waiting for an answer. `sessionId` is the session whose item it is: this session's,
 * or a sub-agent's below it (the runtime tells the subscribers of every session above a sub-agent's,
 * since a sub-agent asks before anyone could subscribe to its session). */
export type Approval = PendingApproval;

/** How an approval ended (`approvalResolved`): kept so the tool call can say who decided. */
export interface ApprovalOutcome {
  itemId: string;
  /** The session whose tool call it was (this one, or a sub-agent's). */
  sessionId: string;
  decision: ApprovalDecision;
  by: Address;
}

export interface SessionStatus {
  state: SessionState;
  activeTurnId?: string;
  context?: ContextUsage;
  usage?: TokenUsage;
  lastTurn?: Turn;
  compacting?: boolean;
}

export type TimelineOp =
  /** An item saved under `ordinal`: insert it in ordinal order, replacing a streamed item of the same id. */
  | { op: "saved"; ordinal: number; item: Item }
  /** A streaming item (new, or its content replaced after a resync). */
  | { op: "streaming"; itemIndex: number; item: Item }
  | { op: "delta"; itemId: string; delta: string }
  /** A streamed item that the runtime never saved (its runtime died): take it off the screen. */
  | { op: "removed"; itemId: string }
  | { op: "pendingAdded"; input: PendingInput }
  | { op: "pendingRemoved"; itemId: string; reason: string }
  | { op: "approval"; approval: Approval }
  /** The prompt is over: answered (`outcome` says how and by whom), or gone after a resync. */
  | { op: "approvalClosed"; itemId: string; outcome?: ApprovalOutcome }
  | { op: "status"; status: SessionStatus }
  | { op: "turn"; phase: "started" | "completed"; turn: Turn }
  | { op: "error"; error: ErrorInfo }
  | { op: "compaction"; phase: "started" | "completed"; turnId: string; before?: ContextUsage; after?: ContextUsage }
  /** What a running turn changed in the workspace so far (`turnDiffUpdated`): one entry per path. */
  | { op: "turnFiles"; turnId: string; files: FileChangeSummary[] }
  /** Older items loaded on request ("load earlier"): prepend them. */
  | { op: "earlier"; items: LoggedItem[]; hasEarlier: boolean };

export interface TimelineSnapshot {
  items: LoggedItem[];
  streaming: StreamingItem[];
  pending: PendingInput[];
  approvals: Approval[];
  /** The approvals answered while this client watched, oldest first. */
  outcomes: ApprovalOutcome[];
  status: SessionStatus;
  hasEarlier: boolean;
  errors: ErrorInfo[];
}

const MAX_ERRORS = 20;
const MAX_OUTCOMES = 500;

function cloneItem(item: Item): Item {
  return {
    ...item,
    ...(item.content ? { content: item.content.map((part) => ({ ...part })) } : {}),
    ...(item.toolCall ? { toolCall: { ...item.toolCall } } : {}),
  };
}

/** Appends a delta where PROTOCOL says it goes: a tool call's arguments, else the item's text. */
export function appendDelta(item: Item, delta: string): void {
  if (item.type === "toolCall" && item.toolCall) {
    item.toolCall.arguments += delta;
    return;
  }
  const content = item.content ?? (item.content = []);
  const last = content[content.length - 1];
  if (last && last.type === "text") last.text = (last.text ?? "") + delta;
  else content.push({ type: "text", text: delta });
}

export function isAwaitingApproval(item: Item): boolean {
  return item.status === "awaitingApproval";
}

const PATH_ARGUMENTS = ["path", "file_path", "workdir"];

/** What a tool call awaiting approval asks, read from the item alone: the tool, its arguments, the
 * shell command and the paths it names, as the runtime builds them. Only for a server whose
 * `subscribeSession` has no `pendingApprovals` (older than the one that added it): the runtime's
 * reason is not in the item. */
export function approvalFromItem(item: Item): ApprovalRequest {
  const call = item.toolCall;
  const tool = call?.name ?? "tool";
  let parsed: unknown;
  try {
    parsed = JSON.parse(call?.arguments ?? "");
  } catch {
    parsed = undefined;
  }
  const args: Record<string, unknown> =
    typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  const request: ApprovalRequest = { tool, arguments: args };
  if (tool === "shell" && typeof args.command === "string") request.command = args.command;
  const paths = PATH_ARGUMENTS.map((key) => args[key]).filter((value): value is string => typeof value === "string");
  if (paths.length > 0) request.paths = paths;
  return request;
}

export class SessionTimeline {
  /** Saved items by ordinal, in ascending order of insertion only for display (see `items()`). */
  private readonly saved = new Map<number, Item>();
  private readonly savedIds = new Map<string, number>();
  private readonly streaming = new Map<number, Item>(); // by itemIndex
  private readonly pending = new Map<string, PendingInput>();
  private readonly approvals = new Map<string, Approval>();
  private readonly outcomes = new Map<string, ApprovalOutcome>();
  private readonly errors: ErrorInfo[] = [];
  private status: SessionStatus = { state: "idle" };
  /** The smallest ordinal loaded and whether older items exist (history loads newest first). */
  private firstOrdinal = Number.POSITIVE_INFINITY;
  private earlierExists = false;

  constructor(readonly sessionId: string) {}

  /** The greatest ordinal known: the cursor to list what was saved after it. */
  get lastOrdinal(): number {
    let last = 0;
    for (const ordinal of this.saved.keys()) if (ordinal > last) last = ordinal;
    return last;
  }

  get oldestOrdinal(): number | undefined {
    return Number.isFinite(this.firstOrdinal) ? this.firstOrdinal : undefined;
  }

  get hasEarlier(): boolean {
    return this.earlierExists;
  }

  get state(): SessionStatus {
    return { ...this.status };
  }

  item(itemId: string): Item | undefined {
    const ordinal = this.savedIds.get(itemId);
    if (ordinal !== undefined) return this.saved.get(ordinal);
    for (const item of this.streaming.values()) if (item.id === itemId) return item;
    return undefined;
  }

  pendingInputs(): PendingInput[] {
    return [...this.pending.values()];
  }

  /** The prompts open now: this session's calls' and, heard here, its sub-agents'. */
  pendingApprovals(): Approval[] {
    return [...this.approvals.values()];
  }

  snapshot(): TimelineSnapshot {
    const items = [...this.saved.entries()]
      .sort(([a], [b]) => a - b)
      .map(([ordinal, item]) => ({ ordinal, item: cloneItem(item) }));
    const streaming = [...this.streaming.entries()]
      .sort(([a], [b]) => a - b)
      .map(([itemIndex, item]) => ({ itemIndex, item: cloneItem(item) }));
    return {
      items,
      streaming,
      pending: [...this.pending.values()],
      approvals: [...this.approvals.values()],
      outcomes: [...this.outcomes.values()],
      status: { ...this.status },
      hasEarlier: this.earlierExists,
      errors: [...this.errors],
    };
  }

  /** The newest page of history (listed newest first, `order: "desc"`), on first open. */
  loadLatest(page: LoggedItem[], hasEarlier: boolean): TimelineOp[] {
    const ops = this.addSaved(page);
    this.earlierExists = hasEarlier;
    return ops;
  }

  /** An older page (listed newest first, before `oldestOrdinal`). */
  loadEarlier(page: LoggedItem[], hasEarlier: boolean): TimelineOp[] {
    const fresh = page.filter((logged) => !this.saved.has(logged.ordinal) && !this.savedIds.has(logged.item.id));
    for (const logged of fresh) this.store(logged.ordinal, logged.item);
    this.earlierExists = hasEarlier;
    const items = fresh.sort((a, b) => a.ordinal - b.ordinal).map((l) => ({ ordinal: l.ordinal, item: cloneItem(l.item) }));
    return [{ op: "earlier", items, hasEarlier }];
  }

  /** Items listed after `lastOrdinal` (a catch-up page, ascending). */
  addSaved(page: LoggedItem[]): TimelineOp[] {
    const ops: TimelineOp[] = [];
    for (const logged of [...page].sort((a, b) => a.ordinal - b.ordinal)) ops.push(...this.save(logged.ordinal, logged.item));
    return ops;
  }

  /**
   * A new `subscribeSession` answer, after the items saved since `lastOrdinal` were added with
   * `addSaved`: streaming items, pending inputs and approvals become exactly what the runtime
   * holds now. Streamed items it no longer has (and never saved) leave the screen.
   */
  applySubscription(result: SubscribeSessionResult): TimelineOp[] {
    const ops: TimelineOp[] = [];
    const nowStreaming = new Map<number, Item>();
    for (const entry of result.streamingItems) {
      if (!this.savedIds.has(entry.item.id)) nowStreaming.set(entry.itemIndex, entry.item);
    }
    const keptIds = new Set([...nowStreaming.values()].map((item) => item.id));
    for (const [index, item] of [...this.streaming.entries()]) {
      if (!keptIds.has(item.id)) {
        this.streaming.delete(index);
        ops.push({ op: "removed", itemId: item.id });
      }
    }
    for (const [index, item] of nowStreaming) {
      for (const [oldIndex, old] of this.streaming) if (old.id === item.id && oldIndex !== index) this.streaming.delete(oldIndex);
      const copy = cloneItem(item);
      this.streaming.set(index, copy);
      ops.push({ op: "streaming", itemIndex: index, item: cloneItem(copy) });
    }

    const nowPending = new Map(result.pendingInputs.map((p) => [p.item.id, p]));
    for (const itemId of [...this.pending.keys()]) {
      if (!nowPending.has(itemId)) {
        this.pending.delete(itemId);
        ops.push({ op: "pendingRemoved", itemId, reason: this.savedIds.has(itemId) ? "taken" : "gone" });
      }
    }
    for (const [itemId, info] of nowPending) {
      const input: PendingInput = { item: info.item, mode: info.mode, ...(info.turnId ? { turnId: info.turnId } : {}) };
      if (!this.pending.has(itemId)) ops.push({ op: "pendingAdded", input });
      this.pending.set(itemId, input);
    }

    // The prompts are exactly what the runtime says waits now (in this session and in its
    // sub-agents'), with the runtime's own request (its reason included); any other prompt is over.
    const waiting = new Map<string, Approval>();
    if (Array.isArray(result.pendingApprovals)) {
      for (const pending of result.pendingApprovals) waiting.set(pending.itemId, pending);
    } else {
      // an older server: a tool call of this session still awaiting approval keeps (or gets) its prompt
      for (const item of [...this.saved.values(), ...nowStreaming.values()]) {
        if (isAwaitingApproval(item)) waiting.set(item.id, { itemId: item.id, sessionId: this.sessionId, approval: approvalFromItem(item) });
      }
    }
    for (const itemId of [...this.approvals.keys()]) {
      if (!waiting.has(itemId)) {
        this.approvals.delete(itemId);
        ops.push({ op: "approvalClosed", itemId });
      }
    }
    for (const [itemId, approval] of waiting) {
      if (this.approvals.has(itemId)) continue;
      this.approvals.set(itemId, approval);
      ops.push({ op: "approval", approval });
    }
    return ops;
  }

  /** The session's runtime info (from `subscribeConversation` or `sessionUpdated`). */
  setRuntimeInfo(info: {
    state: SessionState;
    activeTurnId?: string;
    context: ContextUsage;
    usage: TokenUsage;
  }): TimelineOp[] {
    const status: SessionStatus = { ...this.status, state: info.state, context: info.context, usage: info.usage };
    if (info.activeTurnId) status.activeTurnId = info.activeTurnId;
    else delete status.activeTurnId;
    return this.setStatus(status);
  }

  applyEvents(events: readonly SessionEvent[]): TimelineOp[] {
    const ops: TimelineOp[] = [];
    for (const event of events) ops.push(...this.applyEvent(event));
    return ops;
  }

  private applyEvent(event: SessionEvent): TimelineOp[] {
    switch (event.type) {
      case "itemStarted": {
        if (this.savedIds.has(event.item.id)) return [];
        const item = cloneItem(event.item);
        this.streaming.set(event.itemIndex, item);
        return [{ op: "streaming", itemIndex: event.itemIndex, item: cloneItem(item) }];
      }
      case "itemDelta": {
        if (this.savedIds.has(event.itemId)) return [];
        let item = this.streaming.get(event.itemIndex);
        if (item === undefined || item.id !== event.itemId) {
          item = [...this.streaming.values()].find((s) => s.id === event.itemId);
        }
        if (item === undefined) return []; // started before our snapshot and already saved, or unknown
        appendDelta(item, event.delta);
        return [{ op: "delta", itemId: event.itemId, delta: event.delta }];
      }
      case "itemCompleted":
        return this.save(event.ordinal, event.item);
      case "pendingInputAdded": {
        const input: PendingInput = { item: event.item, mode: event.mode };
        this.pending.set(event.item.id, input);
        return [{ op: "pendingAdded", input }];
      }
      case "pendingInputRemoved": {
        if (!this.pending.delete(event.itemId)) return [];
        return [{ op: "pendingRemoved", itemId: event.itemId, reason: String(event.reason) }];
      }
      case "turnStarted":
        return [
          { op: "turn", phase: "started", turn: event.turn },
          ...this.setStatus({ ...this.status, activeTurnId: event.turn.id }),
        ];
      case "turnCompleted": {
        const status: SessionStatus = { ...this.status, lastTurn: event.turn };
        if (status.activeTurnId === event.turn.id) delete status.activeTurnId;
        return [{ op: "turn", phase: "completed", turn: event.turn }, ...this.setStatus(status)];
      }
      case "stateChanged":
        return this.setStatus({ ...this.status, state: event.state });
      case "contextUsageUpdated":
        return this.setStatus({ ...this.status, context: event.context });
      case "usageUpdated":
        return this.setStatus({ ...this.status, usage: event.usage });
      case "error":
        this.errors.push(event.error);
        if (this.errors.length > MAX_ERRORS) this.errors.shift();
        return [{ op: "error", error: event.error }];
      case "approvalRequested": {
        // `sessionId` is absent only from servers older than the one that added it: then it is ours
        const approval: Approval = { itemId: event.itemId, sessionId: event.sessionId ?? this.sessionId, approval: event.approval };
        this.approvals.set(event.itemId, approval);
        return [{ op: "approval", approval }, ...this.setStreamingStatus(event.itemId, "awaitingApproval")];
      }
      case "approvalResolved": {
        this.approvals.delete(event.itemId);
        const outcome: ApprovalOutcome = {
          itemId: event.itemId,
          sessionId: event.sessionId ?? this.sessionId,
          decision: event.decision,
          by: event.by,
        };
        this.outcomes.delete(event.itemId);
        this.outcomes.set(event.itemId, outcome);
        if (this.outcomes.size > MAX_OUTCOMES) this.outcomes.delete(this.outcomes.keys().next().value as string);
        return [{ op: "approvalClosed", itemId: event.itemId, outcome }, ...this.setStreamingStatus(event.itemId, "streaming")];
      }
      case "compactionStarted":
        return [
          { op: "compaction", phase: "started", turnId: event.turnId },
          ...this.setStatus({ ...this.status, compacting: true }),
        ];
      case "compactionCompleted":
        return [
          { op: "compaction", phase: "completed", turnId: event.turnId, before: event.before, after: event.after },
          ...this.setStatus({ ...this.status, compacting: false, context: event.after }),
        ];
      case "turnDiffUpdated":
        return [{ op: "turnFiles", turnId: event.turnId, files: event.files }];
      default:
        return []; // an event type this client does not know: ignored (schemas/README.md)
    }
  }

  /** The runtime announces a tool call's wait for approval (and its end) by events, not by a new
   * item: the streamed item takes the status a snapshot would show. */
  private setStreamingStatus(itemId: string, status: Item["status"]): TimelineOp[] {
    for (const [itemIndex, item] of this.streaming) {
      if (item.id !== itemId) continue;
      if (item.status === status) return [];
      item.status = status;
      return [{ op: "streaming", itemIndex, item: cloneItem(item) }];
    }
    return [];
  }

  private setStatus(status: SessionStatus): TimelineOp[] {
    this.status = status;
    return [{ op: "status", status: { ...status } }];
  }

  private store(ordinal: number, item: Item): void {
    this.saved.set(ordinal, cloneItem(item));
    this.savedIds.set(item.id, ordinal);
    if (ordinal < this.firstOrdinal) this.firstOrdinal = ordinal;
  }

  private save(ordinal: number, item: Item): TimelineOp[] {
    if (this.saved.has(ordinal)) return []; // listed and announced both: once on screen
    const previous = this.savedIds.get(item.id);
    if (previous !== undefined) this.saved.delete(previous);
    this.store(ordinal, item);
    for (const [index, streamed] of this.streaming) if (streamed.id === item.id) this.streaming.delete(index);
    const ops: TimelineOp[] = [{ op: "saved", ordinal, item: cloneItem(item) }];
    if (!isAwaitingApproval(item) && this.approvals.delete(item.id)) ops.push({ op: "approvalClosed", itemId: item.id });
    return ops;
  }
}
