"""Requests about conversations: create, open, list, fork, archive, title, delete."""

from __future__ import annotations

import attrs

from openvaala_lsp.model import (
    ConversationId,
    ExecutorSettings,
    ModelSelection,
    Order,
    TurnId,
)
from openvaala_lsp.protocol.api.checkpoints import RestoreFiles
from openvaala_lsp.protocol.api.common import (
    _check_environment,
    _check_limit,
)


@attrs.define(kw_only=True)
class CreateConversationParams:
    agent_name: str = ""
    environment: list[str] | None = attrs.field(default=None, validator=_check_environment)
    ephemeral: bool = False
    executor_settings: ExecutorSettings | None = None
    model: ModelSelection | None = None


@attrs.define(kw_only=True)
class OpenConversationParams:
    conversation_id: ConversationId
    environment: list[str] | None = attrs.field(default=None, validator=_check_environment)


@attrs.define(kw_only=True)
class GetConversationParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class IsConversationOpenParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class GetMcpServersParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class IsConversationOpenResult:
    open: bool


@attrs.define(kw_only=True)
class ListConversationsParams:
    cursor: str | None = None
    limit: int | None = attrs.field(default=None, validator=_check_limit)
    order: Order = Order.DESC
    archived: bool | None = None
    query: str | None = None


@attrs.define(kw_only=True)
class DeleteConversationParams:
    conversation_id: ConversationId


@attrs.define(kw_only=True)
class ForkConversationParams:
    conversation_id: ConversationId
    before_turn_id: TurnId | None = None
    last_turn_id: TurnId | None = None
    environment: list[str] | None = attrs.field(default=None, validator=_check_environment)
    executor_settings: ExecutorSettings | None = None
    model: ModelSelection | None = None
    restore_files: RestoreFiles | None = None  # the fork's files, checked out at its cut


@attrs.define(kw_only=True)
class SetConversationArchivedParams:
    conversation_id: ConversationId
    archived: bool


@attrs.define(kw_only=True)
class SetConversationTitleParams:
    conversation_id: ConversationId
    title: str


@attrs.define(kw_only=True)
class SetConversationExecutorSettingsParams:
    conversation_id: ConversationId
    executor_settings: ExecutorSettings
