"""Input and turns: submit, steer, withdraw, interrupt, compact, answer an approval; turns and items."""

from __future__ import annotations

import attrs

from openvaala_lsp.model import (
    Address,
    Content,
    ConversationId,
    Item,
    ItemId,
    Order,
    Ordinal,
    SessionId,
    SessionInputMode,
    Turn,
    TurnId,
)
from openvaala_lsp.protocol.api.common import (
    ApprovalDecision,
    _check_limit,
)


@attrs.define(kw_only=True)
class SubmitInputParams:
    conversation_id: ConversationId
    content: list[Content]
    input_id: str | None = None
    from_: Address | None = None
    mode: SessionInputMode = SessionInputMode.QUEUE


@attrs.define(kw_only=True)
class SubmitInputResult:
    item_id: ItemId


@attrs.define(kw_only=True)
class SteerInputParams:
    conversation_id: ConversationId
    item_id: ItemId
    turn_id: TurnId


@attrs.define(kw_only=True)
class WithdrawInputParams:
    conversation_id: ConversationId
    item_id: ItemId


@attrs.define(kw_only=True)
class WithdrawInputResult:
    items: list[Item]


@attrs.define(kw_only=True)
class InterruptTurnParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class InterruptTurnResult:
    turn_id: TurnId


@attrs.define(kw_only=True)
class CompactContextResult:
    turn_id: TurnId


@attrs.define(kw_only=True)
class InterruptTurnWithInputParams:
    conversation_id: ConversationId
    item_id: ItemId
    turn_id: TurnId


@attrs.define(kw_only=True)
class AnswerApprovalParams:
    """`answerApproval`: the answer to an `approvalRequested` event; the first answer wins."""

    conversation_id: ConversationId
    item_id: ItemId
    decision: ApprovalDecision
    message: str | None = None


@attrs.define(kw_only=True)
class CompactContextParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class GetTurnsParams:
    conversation_id: ConversationId
    turn_ids: list[TurnId]
    session_id: SessionId | None = None


@attrs.define(kw_only=True)
class GetTurnsResult:
    turns: list[Turn]


@attrs.define(kw_only=True)
class ListTurnsParams:
    conversation_id: ConversationId
    session_id: SessionId | None = None
    cursor: str | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)
    order: Order = Order.ASC


@attrs.define(kw_only=True)
class ListItemsParams:
    conversation_id: ConversationId
    session_id: SessionId | None = None
    cursor: Ordinal | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)
    order: Order = Order.ASC
