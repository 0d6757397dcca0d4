"""The method registry: every request and notification of the protocol with its wire types.

One table feeds the server (which methods to register and how to decode them), the schema
generator and the `initialize` capabilities. `runtime` names the runtime method a request calls.
"""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.fieldrepr import FieldRepr
from openvaala_lsp.model import (
    Content,
    Conversation,
    ConversationListEntry,
    ErrorInfo,
    LoggedItem,
    Page,
    Session,
    Turn,
)
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.events import ConversationEvent, SessionEvent

PREFIX = "openvaala/"


@attrs.define(frozen=True)
class RequestSpec(FieldRepr):
    method: str
    # a type, or the name of one in `api`, created when first used (see `protocol.api`)
    params_type: type | str
    result_type: Any
    runtime: str  # the runtime method's name

    @property
    def params(self) -> type:
        resolved: type = _resolve(self.params_type)
        return resolved

    @property
    def result(self) -> Any:
        return _resolve(self.result_type)


def _resolve(shape: Any) -> Any:
    return getattr(api, shape) if isinstance(shape, str) else shape


def _request(name: str, params: type | str, result: Any) -> RequestSpec:
    runtime = "".join("_" + c.lower() if c.isupper() else c for c in name)
    return RequestSpec(PREFIX + name, params, result, runtime)


REQUESTS: dict[str, RequestSpec] = {
    spec.method: spec
    for spec in (
        _request("createConversation", "CreateConversationParams", Conversation),
        _request("openConversation", "OpenConversationParams", Conversation),
        _request("getConversation", "GetConversationParams", Conversation),
        _request("isConversationOpen", "IsConversationOpenParams", "IsConversationOpenResult"),
        _request("listConversations", "ListConversationsParams", Page[ConversationListEntry, str]),
        _request("deleteConversation", "DeleteConversationParams", "EmptyResult"),
        _request("forkConversation", "ForkConversationParams", Conversation),
        _request("setConversationArchived", "SetConversationArchivedParams", Conversation),
        _request("setConversationTitle", "SetConversationTitleParams", "EmptyResult"),
        _request("setConversationExecutorSettings", "SetConversationExecutorSettingsParams", Conversation),
        _request("submitInput", "SubmitInputParams", "SubmitInputResult"),
        _request("steerInput", "SteerInputParams", "EmptyResult"),
        _request("withdrawInput", "WithdrawInputParams", "WithdrawInputResult"),
        _request("interruptTurn", "InterruptTurnParams", "InterruptTurnResult"),
        _request("interruptTurnWithInput", "InterruptTurnWithInputParams", "EmptyResult"),
        _request("compactContext", "CompactContextParams", "CompactContextResult"),
        _request("getTurns", "GetTurnsParams", "GetTurnsResult"),
        _request("listTurns", "ListTurnsParams", Page[Turn, str]),
        _request("listItems", "ListItemsParams", Page[LoggedItem, int]),
        _request("listSessions", "ListSessionsParams", Page[Session, str]),
        _request("getSessionById", "GetSessionByIdParams", Session),
        _request("getSessionDetails", "GetSessionDetailsParams", "SessionDetails"),
        _request("getSessionContextUsage", "GetSessionContextUsageParams", "SessionContextUsage"),
        _request("setSessionModel", "SetSessionModelParams", Session),
        _request("subscribeConversation", "SubscribeConversationParams", "SubscribeConversationResult"),
        _request("subscribeSession", "SubscribeSessionParams", "SubscribeSessionResult"),
        _request("getSessionSnapshot", "GetSessionSnapshotParams", "GetSessionSnapshotResult"),
        _request(
            "subscribeRunningConversations",
            "SubscribeRunningConversationsParams",
            "SubscribeRunningConversationsResult",
        ),
        _request("unsubscribe", "UnsubscribeParams", "EmptyResult"),
        _request("listAgents", "ListAgentsParams", "ListAgentsResult"),
        _request("listModels", "ListModelsParams", "ModelList"),
        _request("listExecutors", "ListExecutorsParams", "ListExecutorsResult"),
        _request("getHooks", "GetHooksParams", "GetHooksResult"),
        _request("getMcpServers", "GetMcpServersParams", "GetMcpServersResult"),
        _request("setClientMcpServers", "SetClientMcpServersParams", "EmptyResult"),
        _request("getSkills", "GetSkillsParams", "GetSkillsResult"),
        _request("setDefinitions", Definitions, "SetDefinitionsResult"),
        _request("getWorkspaceDirectories", "GetWorkspaceDirectoriesParams", "WorkspaceDirectories"),
        _request("resolveWorkspaceDirectory", "ResolveWorkspaceDirectoryParams", "ResolveWorkspaceDirectoryResult"),
        _request("openTerminalWorkspace", "OpenTerminalWorkspaceParams", "TerminalWorkspace"),
        _request("isIdle", "IsIdleParams", "IsIdleResult"),
        _request("answerApproval", "AnswerApprovalParams", "EmptyResult"),
        _request("query", "QueryParams", "QueryResult"),
        _request("exportUsage", "ExportUsageParams", "ExportUsageResult"),
    )
}


# Server -> client notifications


@attrs.define(kw_only=True)
class ConversationEventParams(FieldRepr):
    subscription_id: str
    seq: int
    event: ConversationEvent


@attrs.define(kw_only=True)
class SessionEventParams(FieldRepr):
    subscription_id: str
    seq: int
    events: list[SessionEvent]


@attrs.define(kw_only=True)
class RunningConversationsParams(FieldRepr):
    subscription_id: str
    seq: int
    conversation_ids: list[str]


@attrs.define(kw_only=True)
class SubscriptionClosedParams(FieldRepr):
    """`reason.kind` is an error kind (e.g. subscriberTooSlow, conversationReconfigured,
    runtimeStopped) or `unsubscribed`."""

    subscription_id: str
    reason: ErrorInfo


NOTIFICATIONS: dict[str, type] = {
    PREFIX + "conversationEvent": ConversationEventParams,
    PREFIX + "sessionEvent": SessionEventParams,
    PREFIX + "runningConversations": RunningConversationsParams,
    PREFIX + "subscriptionClosed": SubscriptionClosedParams,
}


# Server -> client requests


@attrs.define(kw_only=True)
class CallClientToolParams(FieldRepr):
    client_id: str
    conversation_id: str
    server: str
    tool: str
    arguments: dict[str, Any]


@attrs.define(kw_only=True)
class CallClientToolResult(FieldRepr):
    content: list[Content]
    is_error: bool = False


SERVER_REQUESTS: dict[str, RequestSpec] = {
    PREFIX + "callClientTool": RequestSpec(
        PREFIX + "callClientTool", CallClientToolParams, CallClientToolResult, "call_client_tool"
    ),
}
