"""Subscriptions to conversations, sessions and the running conversations."""

from __future__ import annotations

import attrs

from openvaala_lsp.model import (
    ConversationId,
    Ordinal,
    SessionId,
    SessionRuntimeInfo,
)
from openvaala_lsp.protocol.api.common import (
    PendingApproval,
    PendingInputInfo,
    StreamingItem,
)


@attrs.define(kw_only=True)
class SubscribeConversationParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class SubscribeConversationResult:
    subscription_id: str
    title: str
    sessions: list[SessionRuntimeInfo]


@attrs.define(kw_only=True)
class SubscribeSessionParams:
    conversation_id: ConversationId
    session_id: SessionId


@attrs.define(kw_only=True)
class SubscribeSessionResult:
    subscription_id: str
    last_saved_ordinal: Ordinal
    pending_inputs: list[PendingInputInfo]
    streaming_items: list[StreamingItem]
    # the approvals waiting now, of this session and of its sub-agents' sessions
    pending_approvals: list[PendingApproval] = attrs.Factory(list)
    # the snapshot goes on in pages (`getSessionSnapshot`) when one message cannot hold it; the
    # subscription's events come once the last page was read
    snapshot_cursor: str | None = None


@attrs.define(kw_only=True)
class GetSessionSnapshotParams:
    subscription_id: str
    cursor: str


@attrs.define(kw_only=True)
class GetSessionSnapshotResult:
    """The next page of a subscribeSession snapshot: more of its three lists, in their order."""

    pending_inputs: list[PendingInputInfo]
    streaming_items: list[StreamingItem]
    pending_approvals: list[PendingApproval]
    snapshot_cursor: str | None = None


@attrs.define(kw_only=True)
class SubscribeRunningConversationsParams:
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class ListAgentsParams:
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class ListExecutorsParams:
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class GetHooksParams:
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class RunningConversations:
    conversation_ids: list[ConversationId]


@attrs.define(kw_only=True)
class SubscribeRunningConversationsResult:
    subscription_id: str
    initial: RunningConversations


@attrs.define(kw_only=True)
class UnsubscribeParams:
    subscription_id: str
