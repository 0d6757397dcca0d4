// What the chat view would show for one session, rebuilt from the TimelineOps the client emits,
// exactly as the webview applies them (upsert by item id, saved items in ordinal order, streamed
// items after them, deltas appended). Tests compare it with the server's `listItems`.
import type { OpenConversation } from "../../src/client/conversation";
import type { Approval, ApprovalOutcome, PendingInput, SessionStatus, TimelineOp } from "../../src/client/timeline";
import { appendDelta } from "../../src/client/timeline";
import type { ErrorInfo, Item, Turn } from "../../src/protocol/generated";
import { waitFor } from "./wait";

export interface ScreenItem {
  item: Item;
  ordinal?: number;
}

export class Screen {
  readonly rows: ScreenItem[] = [];
  readonly pending = new Map<string, PendingInput>();
  readonly approvals = new Map<string, Approval>();
  /** How approvals ended (`approvalResolved`), by item id. */
  readonly outcomes = new Map<string, ApprovalOutcome>();
  readonly ops: TimelineOp[] = [];
  readonly errors: ErrorInfo[] = [];
  readonly turns: Turn[] = [];
  status: SessionStatus = { state: "idle" };
  /** Every delta seen, by item id. */
  readonly deltas = new Map<string, string[]>();

  constructor(open: OpenConversation, sessionId?: string) {
    const main = sessionId ?? open.mainSession?.session.id;
    const entry = main ? open.session(main) : undefined;
    if (!entry) throw new Error("no such session");
    const snapshot = entry.subscription.timeline.snapshot();
    for (const logged of snapshot.items) this.rows.push({ item: logged.item, ordinal: logged.ordinal });
    for (const streamed of snapshot.streaming) this.rows.push({ item: streamed.item });
    for (const input of snapshot.pending) this.pending.set(input.item.id, input);
    for (const approval of snapshot.approvals) this.approvals.set(approval.itemId, approval);
    for (const outcome of snapshot.outcomes) this.outcomes.set(outcome.itemId, outcome);
    this.status = snapshot.status;
    open.onOps(({ sessionId: id, ops }) => {
      if (id === entry.session.id) for (const op of ops) this.apply(op);
    });
  }

  private index(itemId: string): number {
    return this.rows.findIndex((row) => row.item.id === itemId);
  }

  private apply(op: TimelineOp): void {
    this.ops.push(op);
    switch (op.op) {
      case "saved": {
        const at = this.index(op.item.id);
        if (at !== -1) this.rows.splice(at, 1);
        let position = this.rows.findIndex((row) => row.ordinal === undefined || row.ordinal > op.ordinal);
        if (position === -1) position = this.rows.length;
        this.rows.splice(position, 0, { item: op.item, ordinal: op.ordinal });
        return;
      }
      case "streaming": {
        const at = this.index(op.item.id);
        if (at === -1) this.rows.push({ item: op.item });
        else this.rows[at] = { item: op.item };
        return;
      }
      case "delta": {
        const row = this.rows[this.index(op.itemId)];
        if (row) appendDelta(row.item, op.delta);
        const list = this.deltas.get(op.itemId) ?? [];
        list.push(op.delta);
        this.deltas.set(op.itemId, list);
        return;
      }
      case "removed": {
        const at = this.index(op.itemId);
        if (at !== -1 && this.rows[at]?.ordinal === undefined) this.rows.splice(at, 1);
        return;
      }
      case "earlier":
        this.rows.unshift(...op.items.map((logged) => ({ item: logged.item, ordinal: logged.ordinal })));
        return;
      case "pendingAdded":
        this.pending.set(op.input.item.id, op.input);
        return;
      case "pendingRemoved":
        this.pending.delete(op.itemId);
        return;
      case "approval":
        this.approvals.set(op.approval.itemId, op.approval);
        return;
      case "approvalClosed":
        this.approvals.delete(op.itemId);
        if (op.outcome) this.outcomes.set(op.itemId, op.outcome);
        return;
      case "status":
        this.status = op.status;
        return;
      case "turn":
        if (op.phase === "completed") this.turns.push(op.turn);
        return;
      case "error":
        this.errors.push(op.error);
        return;
      default:
        return;
    }
  }

  /** Saved items on screen, in order. */
  saved(): Item[] {
    return this.rows.filter((row) => row.ordinal !== undefined).map((row) => row.item);
  }

  streaming(): Item[] {
    return this.rows.filter((row) => row.ordinal === undefined).map((row) => row.item);
  }

  texts(): string[] {
    return this.rows.map((row) => textOf(row.item));
  }

  async turnCompleted(count = 1, timeoutMs = 20_000): Promise<Turn> {
    return waitFor(() => this.turns.length >= count && this.turns[count - 1], `turn ${count} to complete`, timeoutMs);
  }

  async until<T>(check: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
    return waitFor(check, what, timeoutMs);
  }

  /** The events the server sent, as far as ops show them. */
  sawOp(predicate: (op: TimelineOp) => boolean): boolean {
    return this.ops.some(predicate);
  }
}

export function textOf(item: Item): string {
  if (item.type === "toolCall") return item.toolCall?.arguments ?? "";
  return (item.content ?? []).map((part) => part.text ?? "").join("");
}
