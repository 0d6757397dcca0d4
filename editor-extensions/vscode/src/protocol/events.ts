// Session events that PROTOCOL.md 0.3 fixes but that the server's schemas do not list yet
// (the server does not send them yet): approvals and compaction. They are typed here by hand,
// from PROTOCOL.md §3, so the client handles them the day the server starts sending them.
import type {
  Address,
  ApprovalDecision,
  ContextUsage,
  ItemStatus,
  SessionEvent,
} from "./generated";

/** What a tool call waiting for the user asks (PROTOCOL.md §3 `approvalRequested`). */
export interface ApprovalRequest {
  tool: string;
  arguments: unknown;
  reason?: string;
  command?: string;
  paths?: string[];
}

export interface ApprovalRequested {
  type: "approvalRequested";
  itemId: string;
  approval: ApprovalRequest;
}

export interface ApprovalResolved {
  type: "approvalResolved";
  itemId: string;
  decision: ApprovalDecision;
  by: Address;
}

export interface CompactionStarted {
  type: "compactionStarted";
  turnId: string;
}

export interface CompactionCompleted {
  type: "compactionCompleted";
  turnId: string;
  before: ContextUsage;
  after: ContextUsage;
}

/** Every session event the client understands; unknown types are ignored (schemas/README.md). */
export type AnySessionEvent =
  | SessionEvent
  | ApprovalRequested
  | ApprovalResolved
  | CompactionStarted
  | CompactionCompleted;

/** PROTOCOL.md §4: a toolCall waiting for the user has status `awaitingApproval`. */
export type AnyItemStatus = ItemStatus | "awaitingApproval";
