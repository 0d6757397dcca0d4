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


def _request(name: str, params: type, result: Any) -> RequestSpec:
    runtime = "".join("_" + c.lower() if c.isupper() else c for c in name)
    return RequestSpec(PREFIX + name, params, result, runtime)


REQUESTS: dict[str, RequestSpec] = {
    spec.method: spec
    for spec in (
        _request("createConversation", api.CreateConversationParams, Conversation),
        _request("openConversation", api.OpenConversationParams, Conversation),
        _request("getConversation", api.GetConversationParams, Conversation),
        _request("isConversationOpen", api.IsConversationOpenParams, api.IsConversationOpenResult),
        _request("listConversations", api.ListConversationsParams, Page[ConversationListEntry, str]),
        _request("deleteConversation", api.DeleteConversationParams, api.EmptyResult),
        _request("forkConversation", api.ForkConversationParams, Conversation),
        _request("setConversationArchived", api.SetConversationArchivedParams, Conversation),
        _request("setConversationTitle", api.SetConversationTitleParams, api.EmptyResult),
        _request("setConversationExecutorSettings", api.SetConversationExecutorSettingsParams, Conversation),
        _request("submitInput", api.SubmitInputParams, api.SubmitInputResult),
        _request("steerInput", api.SteerInputParams, api.EmptyResult),
        _request("withdrawInput", api.WithdrawInputParams, api.WithdrawInputResult),
        _request("interruptTurn", api.InterruptTurnParams, api.InterruptTurnResult),
        _request("interruptTurnWithInput", api.InterruptTurnWithInputParams, api.EmptyResult),
        _request("compactContext", api.CompactContextParams, api.CompactContextResult),
        _request("getTurns", api.GetTurnsParams, api.GetTurnsResult),
        _request("listTurns", api.ListTurnsParams, Page[Turn, str]),
        _request("listItems", api.ListItemsParams, Page[LoggedItem, int]),
        _request("listSessions", api.ListSessionsParams, Page[Session, str]),
        _request("getSessionById", api.GetSessionByIdParams, Session),
        _request("getSessionDetails", api.GetSessionDetailsParams, api.SessionDetails),
        _request("getSessionContextUsage", api.GetSessionContextUsageParams, api.SessionContextUsage),
        _request("setSessionModel", api.SetSessionModelParams, Session),
        _request("subscribeConversation", api.SubscribeConversationParams, api.SubscribeConversationResult),
        _request("subscribeSession", api.SubscribeSessionParams, api.SubscribeSessionResult),
        _request("getSessionSnapshot", api.GetSessionSnapshotParams, api.GetSessionSnapshotResult),
        _request(
            "subscribeRunningConversations",
            api.SubscribeRunningConversationsParams,
            api.SubscribeRunningConversationsResult,
        ),
        _request("unsubscribe", api.UnsubscribeParams, api.EmptyResult),
        _request("listAgents", api.ListAgentsParams, api.ListAgentsResult),
        _request("listModels", api.ListModelsParams, api.ModelList),
        _request("listExecutors", api.ListExecutorsParams, api.ListExecutorsResult),
        _request("getHooks", api.GetHooksParams, api.GetHooksResult),
        _request("getMcpServers", api.GetMcpServersParams, api.GetMcpServersResult),
        _request("setClientMcpServers", api.SetClientMcpServersParams, api.EmptyResult),
        _request("getSkills", api.GetSkillsParams, api.GetSkillsResult),
        _request("setDefinitions", Definitions, api.SetDefinitionsResult),
        _request("getWorkspaceDirectories", api.GetWorkspaceDirectoriesParams, api.WorkspaceDirectories),
        _request("resolveWorkspaceDirectory", api.ResolveWorkspaceDirectoryParams, api.ResolveWorkspaceDirectoryResult),
        _request("openTerminalWorkspace", api.OpenTerminalWorkspaceParams, api.TerminalWorkspace),
        _request("isIdle", api.IsIdleParams, api.IsIdleResult),
        _request("answerApproval", api.AnswerApprovalParams, api.EmptyResult),
        _request("query", api.QueryParams, api.QueryResult),
        _request("exportUsage", api.ExportUsageParams, api.ExportUsageResult),
        _request("getTurnDiff", api.GetTurnDiffParams, api.GetTurnDiffResult),
        _request("revertTurn", api.RevertTurnParams, api.RevertTurnResult),
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


@attrs.define(kw_only=True)
class ReadTextFileParams:
    client_id: str
    conversation_id: str
    path: str  # absolute, inside the conversation's workspace


@attrs.define(kw_only=True)
class ReadTextFileResult:
    text: str


@attrs.define(kw_only=True)
class WriteTextFileParams:
    client_id: str
    conversation_id: str
    path: str  # absolute, inside the conversation's workspace
    text: str


SERVER_REQUESTS: dict[str, RequestSpec] = {
    PREFIX + "callClientTool": RequestSpec(
        PREFIX + "callClientTool", CallClientToolParams, CallClientToolResult, "call_client_tool"
    ),
    PREFIX + "readTextFile": RequestSpec(
        PREFIX + "readTextFile", ReadTextFileParams, ReadTextFileResult, "read_text_file"
    ),
    PREFIX + "writeTextFile": RequestSpec(
        PREFIX + "writeTextFile", WriteTextFileParams, api.EmptyResult, "write_text_file"
    ),
}
