"""Requests and results of the runtime API: one request type per `Runtime` method of the seed.

Field names follow the Go structs in snake_case; the protocol layer renames them to lowerCamelCase.
Fields with a default are optional on the wire.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from openvaala_lsp.definitions import ModelDefinition, Permissions, Sandbox
from openvaala_lsp.mcp.model import ClientMCPServer, MCPServerInfo
from openvaala_lsp.model import (
    Address,
    Content,
    ContextUsage,
    ConversationId,
    ExecutorSettings,
    Item,
    ItemId,
    ModelCallId,
    ModelRef,
    ModelSelection,
    Order,
    Ordinal,
    Session,
    SessionId,
    SessionInputMode,
    SessionRuntimeInfo,
    TokenUsage,
    Turn,
    TurnId,
    WorkspaceFolder,
    check_path,
)
from openvaala_lsp.protocol.errors import FieldError

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
DEFAULT_QUERY_LIMIT = 10_000
MAX_QUERY_LIMIT = 100_000


def _check_limit(instance: Any, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_LIMIT:
        raise FieldError(attribute.name, f"must be between 1 and {MAX_LIMIT}")


def _check_query_limit(instance: Any, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_QUERY_LIMIT:
        raise FieldError(attribute.name, f"must be between 1 and {MAX_QUERY_LIMIT}")


def _check_environment(instance: Any, attribute: attrs.Attribute[list[str] | None], value: list[str] | None) -> None:
    for entry in value or ():
        if "=" not in entry or entry.startswith("="):
            raise FieldError(attribute.name, f"entries are KEY=VALUE strings, got {entry[:200]!r}")
        if "\0" in entry:
            raise FieldError(attribute.name, "an environment entry cannot hold a NUL character")


# Conversations


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


@attrs.define(kw_only=True)
class EmptyResult:
    """The result of methods that return only an error in Go."""


# Input and turns


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
class ApprovalRequest:
    """What the user is asked to allow: the tool and its arguments, why it asks, and for the shell the
    command; the paths it names."""

    tool: str
    arguments: dict[str, Any]
    reason: str | None = None
    command: str | None = None
    paths: list[str] | None = None


@attrs.define(kw_only=True)
class PendingApproval:
    """A tool call waiting for `answerApproval`: its item, the session it belongs to, the request."""

    item_id: ItemId
    session_id: SessionId
    approval: ApprovalRequest


class ApprovalDecision(enum.StrEnum):
    ALLOW_ONCE = "allowOnce"
    ALLOW_ALWAYS = "allowAlways"
    DENY = "deny"


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


# Sessions


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
class PendingInputInfo:
    item: Item
    mode: SessionInputMode
    turn_id: TurnId | None = None


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


# Subscriptions


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
class StreamingItem:
    item_index: int
    item: Item


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
class IsIdleParams:
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


# Definitions


@attrs.define(kw_only=True)
class AgentInfo:
    name: str
    description: str = ""
    default_model: ModelRef | None = None
    permissions: Permissions | None = None  # as defined; absent: the runtime's defaults
    sandbox: Sandbox | None = None  # as defined; absent: workspace-write without network


@attrs.define(kw_only=True)
class ListAgentsResult:
    agents: list[AgentInfo]


@attrs.define(kw_only=True)
class ListModelsParams:
    agent_name: str | None = None


@attrs.define(kw_only=True)
class ModelList:
    models: list[ModelDefinition]
    agent_default_model: ModelRef | None = None


@attrs.define(kw_only=True)
class ExecutorDetails:
    id: str
    kind: str
    description: str = ""


@attrs.define(kw_only=True)
class ListExecutorsResult:
    executors: list[ExecutorDetails]


@attrs.define(kw_only=True)
class HookInfo:
    name: str
    event: str
    command: str
    matcher: str | None = None
    timeout_ms: int | None = None


@attrs.define(kw_only=True)
class GetHooksResult:
    hooks: list[HookInfo]


@attrs.define(kw_only=True)
class GetMcpServersResult:
    servers: list[MCPServerInfo]


@attrs.define(kw_only=True)
class SetClientMcpServersParams:
    conversation_id: ConversationId
    client_id: str
    servers: list[ClientMCPServer]


@attrs.define(kw_only=True)
class GetSkillsParams:
    agent_name: str | None = None
    conversation_id: ConversationId | None = None
    executor_settings: ExecutorSettings | None = None


@attrs.define(kw_only=True)
class SkillInfo:
    name: str
    description: str
    path: str | None = None


@attrs.define(kw_only=True)
class GetSkillsResult:
    skills: list[SkillInfo]


@attrs.define(kw_only=True)
class SetDefinitionsResult:
    busy_conversation_ids: list[ConversationId]


# Workspace


@attrs.define(kw_only=True)
class GetWorkspaceDirectoriesParams:
    base_directory: str | None = attrs.field(default=None, validator=check_path)
    directory: str | None = attrs.field(default=None, validator=check_path)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class WorkspaceDirectories:
    base_directory: str
    directory: str
    entries: list[WorkspaceFolder]
    workspace_folders: list[WorkspaceFolder]


@attrs.define(kw_only=True)
class ResolveWorkspaceDirectoryParams:
    directory: str = attrs.field(validator=check_path)
    base_directory: str | None = attrs.field(default=None, validator=check_path)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class ResolveWorkspaceDirectoryResult:
    directory: str


@attrs.define(kw_only=True)
class OpenTerminalWorkspaceParams:
    directory: str | None = attrs.field(default=None, validator=check_path)
    environment: list[str] | None = attrs.field(default=None, validator=_check_environment)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class Workspace:
    root: str
    environment: list[str]


@attrs.define(kw_only=True)
class TerminalWorkspace:
    directory: str
    executor_id: str
    workspace: Workspace


@attrs.define(kw_only=True)
class IsIdleResult:
    idle: bool


# SQL on the history


@attrs.define(kw_only=True)
class QueryParams:
    """One read-only statement (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN) on the
    history database; `parameters` fill its `?` / `$1` placeholders in order."""

    sql: str
    parameters: list[Any] | None = None
    limit: int | None = attrs.field(default=None, validator=_check_query_limit)


@attrs.define(kw_only=True)
class QueryColumn:
    name: str
    type: str  # DuckDB's name of the type: "BIGINT", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]", ...


@attrs.define(kw_only=True)
class QueryResult:
    """`rows` hold JSON values in column order; `truncated`: more rows existed than were returned."""

    columns: list[QueryColumn]
    rows: list[list[Any]] = attrs.field(metadata={"json": True})  # JSON values already: sent as they are
    truncated: bool


# Usage export (an openvaala extension: schemas/README.md, "Usage analytics")


def _absolute(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    check_path(instance, attribute, value)
    if not value.startswith("/"):
        raise FieldError(attribute.name, f"expected an absolute path, got {value[:200]!r}")


def _name(instance: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not 1 <= len(value) <= 200:
        raise FieldError(attribute.name, "must be 1 to 200 characters")


@attrs.define(kw_only=True)
class ExportUsageParams:
    """Writes the analytic views' rows that are new since the last export to `directory` as Parquet,
    partitioned by day; `machine` and `user` (default: the runtime's host name and user) label every
    row; `redact` leaves out error messages too (no export holds prompts, answers or tool output)."""

    directory: str = attrs.field(validator=_absolute)
    redact: bool = False
    machine: str | None = attrs.field(default=None, validator=_name)
    user: str | None = attrs.field(default=None, validator=_name)


@attrs.define(kw_only=True)
class ExportedTable:
    name: str  # model_calls, turns or compactions: the folder under `directory`
    rows: int
    files: int


@attrs.define(kw_only=True)
class ExportUsageResult:
    """`number` counts this database's exports to `directory` (1 for the first)."""

    directory: str
    number: int
    machine: str
    user: str
    redacted: bool
    tables: list[ExportedTable]
