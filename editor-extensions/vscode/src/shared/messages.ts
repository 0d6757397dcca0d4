// The messages between the extension host and the chat webview (both directions). The protocol
// client lives in the host; the webview only renders and asks.
import type {
  ApprovalDecision,
  ContentInput,
  Conversation,
  ConversationListEntry,
  ModelDefinition,
  ModelRef,
  Session,
  SessionContextUsage,
  SessionInputMode,
  TurnReason,
  TurnStatus,
} from "../protocol/generated";
import type { SandboxState } from "../client/rpc";
import type { SyncState } from "../client/sessionSubscription";
import type { TimelineOp, TimelineSnapshot } from "../client/timeline";
import type { UsageRow } from "../usage/usageData";

export interface FolderInfo {
  key: string;
  name: string;
}

/** One file a turn changed, as its list under the turn shows it. */
export interface TurnFile {
  path: string;
  kind: string;
  additions: number;
  deletions: number;
  movedFrom?: string;
  binary?: boolean;
}

/** What the view knows of a turn beyond its items: how it ended, what it changed, whether it was undone. */
export interface TurnInfo {
  turnId: string;
  status?: TurnStatus;
  reason?: TurnReason;
  /** The workspace folder's files the turn changed (absent: none known). */
  files?: TurnFile[];
  /** false: the checkpoints left files out (the list is not all). */
  complete?: boolean;
  /** The revert turn that undid this one ("Redo" reverts it), while it stays undone. */
  undoneBy?: string;
}

/** Context for the model from the editor: a file, or lines of it. `path` is as shown (relative to
 * the workspace folder when inside it); `text` is the lines themselves when the editor read them. */
export interface ContextRef {
  path: string;
  /** Absolute path (or URI) the host reads when `text` is absent. */
  uri?: string;
  startLine?: number;
  endLine?: number;
  text?: string;
  languageId?: string;
  /** An @-mention typed, not picked from the completion: sent only if it names a readable file in
   * the workspace folder (else it stays plain text, e.g. "@someone"). */
  optional?: boolean;
}

/** A workspace file offered by the @-mention completion. */
export interface MentionItem {
  path: string;
}

export interface ListFilter {
  query: string;
  archived: boolean;
}

/** Where the connection to the runtime stands, with a fix when it cannot work. */
export type ConnectionStatus =
  | { state: "starting" }
  | {
      state: "ready";
      serverVersion: string;
      protocolVersion: string;
      /** Whether shell commands run sandboxed (absent: the server does not say). */
      sandbox?: SandboxState;
      /** This connection's clientId: `approvalResolved.by.clientId` equal to it means "this window". */
      clientId?: string;
    }
  | { state: "reconnecting"; message: string }
  | { state: "failed"; message: string; fix?: FixAction };

export interface FixAction {
  label: string;
  command: HostCommand;
}

/** Extension commands the view may ask for. */
export type HostCommand = "setup" | "usage" | "log" | "restart" | "settings" | "status";

export type HostMessage =
  | { type: "init"; folders: FolderInfo[]; folder?: string; connection: ConnectionStatus; actions: string[] }
  | { type: "connection"; folder: string; connection: ConnectionStatus; actions: string[] }
  | {
      type: "conversations";
      entries: ConversationListEntry[];
      running: string[];
      filter: ListFilter;
      nextCursor?: string;
      append: boolean;
    }
  | { type: "running"; conversationIds: string[] }
  | { type: "opened"; conversation: Conversation; mainSessionId: string }
  | { type: "closed" }
  | { type: "conversation"; conversation: Conversation }
  /** A session's whole state: on open, after the view reloads, and when a sub-agent session appears
   * (`anchor`: the ordinal of the parent's item after which it started). */
  | { type: "session"; session: Session; anchor?: number; snapshot: TimelineSnapshot }
  | { type: "ops"; sessionId: string; ops: TimelineOp[] }
  | { type: "sync"; sessionId: string; state: SyncState }
  | { type: "contextUsage"; sessionId: string; usage: SessionContextUsage }
  | { type: "models"; models: ModelDefinition[]; agentDefault?: ModelRef }
  /** A session's model changed (from this window's picker or the command palette). */
  | { type: "sessionModel"; sessionId: string; model?: ModelRef }
  | { type: "composer"; text: string }
  /** An answer to an approval did not count: `late` (another window answered first), `gone` (no
   * longer pending), `failed` (it may be sent again). */
  | { type: "approvalAnswer"; itemId: string; outcome: "late" | "gone" | "failed"; message: string }
  | { type: "notice"; level: "info" | "warning" | "error"; message: string; fix?: FixAction }
  | { type: "focusInput" }
  /** What turns changed and how they ended; merged by turnId into what the view has. */
  | { type: "turnInfo"; sessionId: string; turns: TurnInfo[] }
  /** An undo (or redo) the runtime refused because files changed since (`conflict`): its words and
   * the files; "Revert anyway" sends it again with `force`. */
  | { type: "revertConflict"; turnId: string; redo: boolean; message: string; files: TurnFile[] }
  | { type: "revertDone"; turnId: string }
  /** The @-mention completion's answer to `mentionQuery`. */
  | { type: "mentions"; requestId: number; query: string; items: MentionItem[] }
  /** Context to attach to the next message (Add selection / current file). */
  | { type: "addContext"; context: ContextRef };

export type ViewMessage =
  | { type: "ready" }
  | { type: "selectFolder"; folder: string }
  | { type: "list"; filter: ListFilter; cursor?: string }
  | { type: "open"; conversationId: string }
  | { type: "back" }
  | { type: "create" }
  | { type: "submit"; content: ContentInput[]; mode: SessionInputMode; context?: ContextRef[] }
  | { type: "steer"; itemId: string }
  | { type: "sendNow"; itemId: string }
  | { type: "withdraw"; itemId: string }
  | { type: "interrupt" }
  /** `message`: with a denial, the user's words for the model. */
  | { type: "approval"; itemId: string; decision: ApprovalDecision; message?: string }
  | { type: "fork"; turnId: string }
  | { type: "compact" }
  | { type: "rename"; conversationId: string }
  | { type: "archive"; conversationId: string; archived: boolean }
  | { type: "delete"; conversationId: string }
  | { type: "setModel"; sessionId: string; model: ModelRef }
  | { type: "loadEarlier"; sessionId: string }
  | { type: "refreshContext"; sessionId: string }
  | { type: "openLink"; href: string }
  | { type: "command"; command: HostCommand }
  /** Opens VS Code's diff editor on one file of a turn (before ↔ after). */
  | { type: "openDiff"; turnId: string; path: string }
  /** Undo: `turnId` is the turn to revert (with every later one); redo: it is the revert's own turn. */
  | { type: "revertTurn"; turnId: string; force?: boolean; redo?: boolean }
  /** Opens a file in the editor (at a line, 1-based). */
  | { type: "openFile"; path: string; line?: number }
  | { type: "mentionQuery"; requestId: number; query: string };

/** The ordered, readable name of a model. */
export function modelKey(model: ModelRef): string {
  return `${model.provider}/${model.name}`;
}

/** Messages of the usage panel. */
export type UsageHostMessage =
  /** `span`: how many days of data there are (the first call to today); the picker offers no
   * longer range under another name. */
  | { type: "usage"; rows: UsageRow[]; since: string; days: number; span?: number; truncated: boolean }
  | { type: "usageError"; message: string };

export type UsageViewMessage = { type: "ready" } | { type: "range"; days: number } | { type: "refresh" };
