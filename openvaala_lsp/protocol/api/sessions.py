"""Sessions: listing them, their details and context usage, their model."""

from __future__ import annotations

import attrs

from openvaala_lsp.model import (
    ContextUsage,
    ConversationId,
    ItemId,
    ModelCallId,
    ModelRef,
    ModelSelection,
    Session,
    SessionId,
    SessionRuntimeInfo,
    TokenUsage,
)
from openvaala_lsp.protocol.api.common import (
    PendingInputInfo,
    _check_limit,
)


@attrs.define(kw_only=True)
class ListSessionsParams:
    conversation_id: ConversationId
    cursor: str | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)


@attrs.define(kw_only=True)
class GetSessionByIdParams:
    session_id: SessionId


@attrs.define(kw_only=True)
class GetSessionDetailsParams:
    conversation_id: ConversationId
    session_id: SessionId


@attrs.define(kw_only=True)
class GetSessionContextUsageParams:
    conversation_id: ConversationId
    session_id: SessionId


@attrs.define(kw_only=True)
class SessionDetails:
    session: Session
    info: SessionRuntimeInfo
    turn_count: int
    item_count: int
    usage: TokenUsage
    pending_inputs: list[PendingInputInfo]


@attrs.define(kw_only=True)
class ItemTokens:
    """What one item of the model's context takes: its type, and the tool's name for a tool call or
    result, so an editor can show what fills the window (tool output, messages, the compaction)."""

    item_id: ItemId
    tokens: int
    type: str
    tool_name: str | None = None


@attrs.define(kw_only=True)
class LastRequestUsage:
    estimated_tokens: int
    model: ModelRef
    model_call_id: ModelCallId
    usage: TokenUsage


@attrs.define(kw_only=True)
class SessionContextUsage:
    items: list[ItemTokens]
    next_request: ContextUsage
    system_tokens: int
    threshold_tokens: int
    tool_tokens: int
    window: int
    last_request: LastRequestUsage | None = None


@attrs.define(kw_only=True)
class SetSessionModelParams:
    conversation_id: ConversationId
    session_id: SessionId
    model: ModelSelection
