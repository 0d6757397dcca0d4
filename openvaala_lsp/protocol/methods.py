"""The method registry: every request and notification of the protocol with its wire types.

One table feeds the server (which methods to register and how to decode them), the schema
generator and the `initialize` capabilities. `runtime` names the runtime method a request calls.
"""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.definitions import Definitions
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
class RequestSpec:
    method: str
    params: type
    result: Any
    runtime: str  # the runtime method's name
    doc: str = ""


def _request(name: str, params: type, result: Any, doc: str = "") -> RequestSpec:
    runtime = "".join("_" + c.lower() if c.isupper() else c for c in name)
    return RequestSpec(PREFIX + name, params, result, runtime, doc)


REQUESTS: dict[str, RequestSpec] = {
    spec.method: spec
    for spec in (
        _request("createConversation", api.CreateConversationRequest, Conversation),
        _request("openConversation", api.OpenConversationRequest, Conversation),
        _request("getConversation", api.GetConversationRequest, Conversation),
        _request("isConversationOpen", api.GetConversationRequest, api.IsConversationOpenResult),
        _request("listConversations", api.ListConversationsRequest, Page[ConversationListEntry, str]),
        _request("deleteConversation", api.DeleteConversationRequest, api.Empty),
        _request("forkConversation", api.ForkConversationRequest, Conversation),
        _request("setConversationArchived", api.SetConversationArchivedRequest, Conversation),
        _request("setConversationTitle", api.SetConversationTitleRequest, api.Empty),
        _request("setConversationExecutorSettings", api.SetConversationExecutorSettingsRequest, Conversation),
        _request("submitInput", api.SubmitInputRequest, api.SubmitInputResult),
        _request("steerInput", api.SteerInputRequest, api.Empty),
        _request("withdrawInput", api.WithdrawInputRequest, api.WithdrawInputResult),
        _request("interruptTurn", api.InterruptTurnRequest, api.TurnIdResult),
        _request("interruptTurnWithInput", api.InterruptTurnWithInputRequest, api.Empty),
        _request("compactContext", api.CompactContextRequest, api.TurnIdResult),
        _request("getTurns", api.GetTurnsRequest, api.GetTurnsResult),
        _request("listTurns", api.ListTurnsRequest, Page[Turn, str]),
        _request("listItems", api.ListItemsRequest, Page[LoggedItem, int]),
        _request("listSessions", api.ListSessionsRequest, Page[Session, str]),
        _request("getSessionById", api.GetSessionByIdRequest, Session),
        _request("getSessionDetails", api.SessionRequest, api.SessionDetails),
        _request("getSessionContextUsage", api.SessionRequest, api.SessionContextUsage),
        _request("setSessionModel", api.SetSessionModelRequest, Session),
        _request("subscribeConversation", api.SubscribeConversationRequest, api.SubscribeConversationResult),
        _request("subscribeSession", api.SubscribeSessionRequest, api.SubscribeSessionResult),
        _request("subscribeRunningConversations", api.NoParams, api.SubscribeRunningConversationsResult),
        _request("unsubscribe", api.UnsubscribeRequest, api.Empty),
        _request("listAgents", api.NoParams, api.ListAgentsResult),
        _request("listModels", api.ListModelsRequest, api.ModelList),
        _request("listExecutors", api.NoParams, api.ListExecutorsResult),
        _request("getHooks", api.NoParams, api.GetHooksResult),
        _request("getMcpServers", api.GetConversationRequest, api.GetMcpServersResult),
        _request("setClientMcpServers", api.SetClientMcpServersRequest, api.Empty),
        _request("getSkills", api.GetSkillsRequest, api.GetSkillsResult),
        _request("setDefinitions", Definitions, api.SetDefinitionsResult),
        _request("getWorkspaceDirectories", api.GetWorkspaceDirectoriesRequest, api.WorkspaceDirectories),
        _request(
            "resolveWorkspaceDirectory", api.ResolveWorkspaceDirectoryRequest, api.ResolveWorkspaceDirectoryResult
        ),
        _request("openTerminalWorkspace", api.OpenTerminalWorkspaceRequest, api.TerminalWorkspace),
        _request("isIdle", api.NoParams, api.IsIdleResult),
        _request("answerApproval", api.AnswerApprovalParams, api.Empty),
        _request("query", api.QueryParams, api.QueryResult),
    )
}


# Server -> client notifications


@attrs.define(kw_only=True)
class ConversationEventParams:
    subscription_id: str
    seq: int
    event: ConversationEvent


@attrs.define(kw_only=True)
class SessionEventParams:
    subscription_id: str
    seq: int
    events: list[SessionEvent]


@attrs.define(kw_only=True)
class RunningConversationsParams:
    subscription_id: str
    seq: int
    conversation_ids: list[str]


@attrs.define(kw_only=True)
class SubscriptionClosedParams:
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
class CallClientToolParams:
    client_id: str
    conversation_id: str
    server: str
    tool: str
    arguments: dict[str, Any]


@attrs.define(kw_only=True)
class CallClientToolResult:
    content: list[Content]
    is_error: bool = False


SERVER_REQUESTS: dict[str, RequestSpec] = {
    PREFIX + "callClientTool": RequestSpec(
        PREFIX + "callClientTool", CallClientToolParams, CallClientToolResult, "call_client_tool"
    ),
}
