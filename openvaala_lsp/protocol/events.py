"""Events the runtime publishes to subscriptions. Each has a constant `type` discriminator."""

from __future__ import annotations

from typing import Literal

import attrs

from openvaala_lsp.model import (
    Address,
    ContextUsage,
    Conversation,
    ErrorInfo,
    FileChangeKind,
    Item,
    ItemId,
    Ordinal,
    Session,
    SessionId,
    SessionRuntimeInfo,
    SessionState,
    TokenUsage,
    Turn,
    TurnId,
)
from openvaala_lsp.protocol.api import ApprovalDecision, ApprovalRequest, PendingInputInfo

# Conversation subscription events


@attrs.define(kw_only=True)
class TitleChanged:
    type: Literal["titleChanged"] = "titleChanged"
    title: str


@attrs.define(kw_only=True)
class SessionAdded:
    type: Literal["sessionAdded"] = "sessionAdded"
    session: Session


@attrs.define(kw_only=True)
class SessionUpdated:
    type: Literal["sessionUpdated"] = "sessionUpdated"
    info: SessionRuntimeInfo


@attrs.define(kw_only=True)
class ConversationUpdated:
    type: Literal["conversationUpdated"] = "conversationUpdated"
    conversation: Conversation


ConversationEvent = TitleChanged | SessionAdded | SessionUpdated | ConversationUpdated


# Session subscription events


@attrs.define(kw_only=True)
class ItemStarted:
    """A new item of the running turn; `itemIndex` numbers the turn's streaming items."""

    type: Literal["itemStarted"] = "itemStarted"
    item_index: int
    item: Item


@attrs.define(kw_only=True)
class ItemDelta:
    """Text appended to the streaming item: to its text content, or to `toolCall.arguments` for a
    tool call item."""

    type: Literal["itemDelta"] = "itemDelta"
    item_index: int
    item_id: ItemId
    delta: str


@attrs.define(kw_only=True)
class ItemCompleted:
    """The item is now saved under `ordinal`."""

    type: Literal["itemCompleted"] = "itemCompleted"
    ordinal: Ordinal
    item: Item


@attrs.define(kw_only=True)
class PendingInputAdded:
    type: Literal["pendingInputAdded"] = "pendingInputAdded"
    item: Item
    mode: str = "queue"


@attrs.define(kw_only=True)
class PendingInputRemoved:
    """`reason` is "taken" (it became part of a turn) or "withdrawn"."""

    type: Literal["pendingInputRemoved"] = "pendingInputRemoved"
    item_id: ItemId
    reason: Literal["taken", "withdrawn"]


@attrs.define(kw_only=True)
class TurnStarted:
    type: Literal["turnStarted"] = "turnStarted"
    turn: Turn


@attrs.define(kw_only=True)
class TurnCompleted:
    type: Literal["turnCompleted"] = "turnCompleted"
    turn: Turn


@attrs.define(kw_only=True)
class StateChanged:
    type: Literal["stateChanged"] = "stateChanged"
    state: SessionState


@attrs.define(kw_only=True)
class ContextUsageUpdated:
    type: Literal["contextUsageUpdated"] = "contextUsageUpdated"
    context: ContextUsage


@attrs.define(kw_only=True)
class UsageUpdated:
    type: Literal["usageUpdated"] = "usageUpdated"
    usage: TokenUsage


@attrs.define(kw_only=True)
class ErrorEvent:
    type: Literal["error"] = "error"
    error: ErrorInfo


@attrs.define(kw_only=True)
class CompactionStarted:
    """The session is compacting its context (state `compacting`), in `turnId`."""

    type: Literal["compactionStarted"] = "compactionStarted"
    turn_id: TurnId


@attrs.define(kw_only=True)
class CompactionCompleted:
    """The compaction item is saved (`itemCompleted` came first); the context before and after it."""

    type: Literal["compactionCompleted"] = "compactionCompleted"
    turn_id: TurnId
    before: ContextUsage
    after: ContextUsage


@attrs.define(kw_only=True)
class ApprovalRequested:
    """A tool call (item `itemId`, now `awaitingApproval`) waits for `answerApproval`."""

    type: Literal["approvalRequested"] = "approvalRequested"
    item_id: ItemId
    session_id: SessionId  # this session's, or a sub-agent session's (whose item it is)
    approval: ApprovalRequest


@attrs.define(kw_only=True)
class ApprovalResolved:
    """The first answer (or an interrupt, or a client leaving) decided it; `by` says who."""

    type: Literal["approvalResolved"] = "approvalResolved"
    item_id: ItemId
    session_id: SessionId
    decision: ApprovalDecision
    by: Address


@attrs.define(kw_only=True)
class FileChangeSummary:
    """One path of a turn's changes, without its diff (`getTurnDiff` has the diffs)."""

    path: str
    kind: FileChangeKind
    additions: int = 0
    deletions: int = 0
    moved_from: str | None = None


@attrs.define(kw_only=True)
class TurnDiffUpdated:
    """What the running turn changed in the workspace so far, one entry per path (from the checkpoint
    before its first change to now), after each of its calls that changed something."""

    type: Literal["turnDiffUpdated"] = "turnDiffUpdated"
    turn_id: TurnId
    files: list[FileChangeSummary]


SessionEvent = (
    ItemStarted
    | ItemDelta
    | ItemCompleted
    | PendingInputAdded
    | PendingInputRemoved
    | TurnStarted
    | TurnCompleted
    | StateChanged
    | ContextUsageUpdated
    | UsageUpdated
    | ErrorEvent
    | CompactionStarted
    | CompactionCompleted
    | ApprovalRequested
    | ApprovalResolved
    | TurnDiffUpdated
)

__all__ = ["ConversationEvent", "PendingInputInfo", "SessionEvent"]
