"""Input and turns: submit, steer, withdraw, interrupt, compact, answer an approval; turns and items."""

from __future__ import annotations

import attrs

from openvaala_lsp.fieldrepr import FieldRepr
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
class SubmitInputParams(FieldRepr):
    conversation_id: ConversationId
    content: list[Content]
    input_id: str | None = None
    from_: Address | None = None
    mode: SessionInputMode = SessionInputMode.QUEUE


@attrs.define(kw_only=True)
class SubmitInputResult(FieldRepr):
    item_id: ItemId


@attrs.define(kw_only=True)
class SteerInputParams(FieldRepr):
    conversation_id: ConversationId
    item_id: ItemId
    turn_id: TurnId


@attrs.define(kw_only=True)
class WithdrawInputParams(FieldRepr):
    conversation_id: ConversationId
    item_id: ItemId


@attrs.define(kw_only=True)
class WithdrawInputResult(FieldRepr):
    items: list[Item]


@attrs.define(kw_only=True)
class InterruptTurnParams(FieldRepr):
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class InterruptTurnResult(FieldRepr):
    turn_id: TurnId


@attrs.define(kw_only=True)
class CompactContextResult(FieldRepr):
    turn_id: TurnId


@attrs.define(kw_only=True)
class InterruptTurnWithInputParams(FieldRepr):
    conversation_id: ConversationId
    item_id: ItemId
    turn_id: TurnId


@attrs.define(kw_only=True)
class AnswerApprovalParams(FieldRepr):
    """`answerApproval`: the answer to an `approvalRequested` event; the first answer wins."""

    conversation_id: ConversationId
    item_id: ItemId
    decision: ApprovalDecision
    message: str | None = None


@attrs.define(kw_only=True)
class CompactContextParams(FieldRepr):
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class GetTurnsParams(FieldRepr):
    conversation_id: ConversationId
    turn_ids: list[TurnId]
    session_id: SessionId | None = None


@attrs.define(kw_only=True)
class GetTurnsResult(FieldRepr):
    turns: list[Turn]


@attrs.define(kw_only=True)
class ListTurnsParams(FieldRepr):
    conversation_id: ConversationId
    session_id: SessionId | None = None
    cursor: str | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)
    order: Order = Order.ASC


@attrs.define(kw_only=True)
class ListItemsParams(FieldRepr):
    conversation_id: ConversationId
    session_id: SessionId | None = None
    cursor: Ordinal | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)
    order: Order = Order.ASC
