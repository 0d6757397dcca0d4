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
