"""Subscriptions to conversations, sessions and the running conversations."""

from __future__ import annotations

import attrs

from openvaala_lsp.fieldrepr import FieldRepr
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
class SubscribeConversationParams(FieldRepr):
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class SubscribeConversationResult(FieldRepr):
    subscription_id: str
    title: str
    sessions: list[SessionRuntimeInfo]


@attrs.define(kw_only=True)
class SubscribeSessionParams(FieldRepr):
    conversation_id: ConversationId
    session_id: SessionId


@attrs.define(kw_only=True)
class SubscribeSessionResult(FieldRepr):
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
class GetSessionSnapshotParams(FieldRepr):
    subscription_id: str
    cursor: str


@attrs.define(kw_only=True)
class GetSessionSnapshotResult(FieldRepr):
    """The next page of a subscribeSession snapshot: more of its three lists, in their order."""

    pending_inputs: list[PendingInputInfo]
    streaming_items: list[StreamingItem]
    pending_approvals: list[PendingApproval]
    snapshot_cursor: str | None = None


@attrs.define(kw_only=True)
class SubscribeRunningConversationsParams(FieldRepr):
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class ListAgentsParams(FieldRepr):
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class ListExecutorsParams(FieldRepr):
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class GetHooksParams(FieldRepr):
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class RunningConversations(FieldRepr):
    conversation_ids: list[ConversationId]


@attrs.define(kw_only=True)
class SubscribeRunningConversationsResult(FieldRepr):
    subscription_id: str
    initial: RunningConversations


@attrs.define(kw_only=True)
class UnsubscribeParams(FieldRepr):
    subscription_id: str
