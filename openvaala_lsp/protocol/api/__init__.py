"""Requests and results of the runtime API: one request type per `Runtime` method of the seed.

Field names follow the Go structs in snake_case; the protocol layer renames them to lowerCamelCase.
Fields with a default are optional on the wire.

The types live in one module per part of the API and are created when first used, through this
package (`api.SubmitInputParams`): creating an attrs class costs ~0.2 ms, and a host answers its
first editors with `common` and `conversations` only (~12 ms less to import at a start, measured).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openvaala_lsp.protocol.api.common import (
    DEFAULT_LIMIT as DEFAULT_LIMIT,
    DEFAULT_QUERY_LIMIT as DEFAULT_QUERY_LIMIT,
    DEFAULT_QUERY_TIMEOUT_MS as DEFAULT_QUERY_TIMEOUT_MS,
    MAX_LIMIT as MAX_LIMIT,
    MAX_QUERY_LIMIT as MAX_QUERY_LIMIT,
    MAX_QUERY_TIMEOUT_MS as MAX_QUERY_TIMEOUT_MS,
    ApprovalDecision as ApprovalDecision,
    ApprovalRequest as ApprovalRequest,
    EmptyResult as EmptyResult,
    IsIdleParams as IsIdleParams,
    IsIdleResult as IsIdleResult,
    PendingApproval as PendingApproval,
    PendingInputInfo as PendingInputInfo,
    StreamingItem as StreamingItem,
    _check_environment as _check_environment,
    _check_limit as _check_limit,
    _check_query_limit as _check_query_limit,
    _check_query_timeout as _check_query_timeout,
)

# the types of each module, by name
GROUPS: dict[str, tuple[str, ...]] = {
    "conversations": (
        "CreateConversationParams",
        "OpenConversationParams",
        "GetConversationParams",
        "IsConversationOpenParams",
        "GetMcpServersParams",
        "IsConversationOpenResult",
        "ListConversationsParams",
        "DeleteConversationParams",
        "ForkConversationParams",
        "SetConversationArchivedParams",
        "SetConversationTitleParams",
        "SetConversationExecutorSettingsParams",
    ),
    "inputs": (
        "SubmitInputParams",
        "SubmitInputResult",
        "SteerInputParams",
        "WithdrawInputParams",
        "WithdrawInputResult",
        "InterruptTurnParams",
        "InterruptTurnResult",
        "CompactContextResult",
        "InterruptTurnWithInputParams",
        "AnswerApprovalParams",
        "CompactContextParams",
        "GetTurnsParams",
        "GetTurnsResult",
        "ListTurnsParams",
        "ListItemsParams",
    ),
    "sessions": (
        "ListSessionsParams",
        "GetSessionByIdParams",
        "GetSessionDetailsParams",
        "GetSessionContextUsageParams",
        "SessionDetails",
        "ItemTokens",
        "LastRequestUsage",
        "SessionContextUsage",
        "SetSessionModelParams",
    ),
    "subscriptions": (
        "SubscribeConversationParams",
        "SubscribeConversationResult",
        "SubscribeSessionParams",
        "SubscribeSessionResult",
        "GetSessionSnapshotParams",
        "GetSessionSnapshotResult",
        "SubscribeRunningConversationsParams",
        "ListAgentsParams",
        "ListExecutorsParams",
        "GetHooksParams",
        "RunningConversations",
        "SubscribeRunningConversationsResult",
        "UnsubscribeParams",
    ),
    "definitions": (
        "AgentInfo",
        "ListAgentsResult",
        "ListModelsParams",
        "ModelList",
        "ExecutorDetails",
        "ListExecutorsResult",
        "HookInfo",
        "GetHooksResult",
        "GetMcpServersResult",
        "SetClientMcpServersParams",
        "GetSkillsParams",
        "SkillInfo",
        "GetSkillsResult",
        "SetDefinitionsResult",
    ),
    "workspace": (
        "GetWorkspaceDirectoriesParams",
        "WorkspaceDirectories",
        "ResolveWorkspaceDirectoryParams",
        "ResolveWorkspaceDirectoryResult",
        "OpenTerminalWorkspaceParams",
        "Workspace",
        "TerminalWorkspace",
    ),
    "query": (
        "QueryParams",
        "QueryColumn",
        "QueryResult",
    ),
    "export": (
        "ExportUsageParams",
        "ExportedTable",
        "ExportUsageResult",
    ),
}
_MODULE_OF = {name: module for module, names in GROUPS.items() for name in names}

if TYPE_CHECKING:
    from openvaala_lsp.protocol.api.conversations import (
        CreateConversationParams as CreateConversationParams,
        DeleteConversationParams as DeleteConversationParams,
        ForkConversationParams as ForkConversationParams,
        GetConversationParams as GetConversationParams,
        GetMcpServersParams as GetMcpServersParams,
        IsConversationOpenParams as IsConversationOpenParams,
        IsConversationOpenResult as IsConversationOpenResult,
        ListConversationsParams as ListConversationsParams,
        OpenConversationParams as OpenConversationParams,
        SetConversationArchivedParams as SetConversationArchivedParams,
        SetConversationExecutorSettingsParams as SetConversationExecutorSettingsParams,
        SetConversationTitleParams as SetConversationTitleParams,
    )
    from openvaala_lsp.protocol.api.definitions import (
        AgentInfo as AgentInfo,
        ExecutorDetails as ExecutorDetails,
        GetHooksResult as GetHooksResult,
        GetMcpServersResult as GetMcpServersResult,
        GetSkillsParams as GetSkillsParams,
        GetSkillsResult as GetSkillsResult,
        HookInfo as HookInfo,
        ListAgentsResult as ListAgentsResult,
        ListExecutorsResult as ListExecutorsResult,
        ListModelsParams as ListModelsParams,
        ModelList as ModelList,
        SetClientMcpServersParams as SetClientMcpServersParams,
        SetDefinitionsResult as SetDefinitionsResult,
        SkillInfo as SkillInfo,
    )
    from openvaala_lsp.protocol.api.export import (
        ExportedTable as ExportedTable,
        ExportUsageParams as ExportUsageParams,
        ExportUsageResult as ExportUsageResult,
    )
    from openvaala_lsp.protocol.api.inputs import (
        AnswerApprovalParams as AnswerApprovalParams,
        CompactContextParams as CompactContextParams,
        CompactContextResult as CompactContextResult,
        GetTurnsParams as GetTurnsParams,
        GetTurnsResult as GetTurnsResult,
        InterruptTurnParams as InterruptTurnParams,
        InterruptTurnResult as InterruptTurnResult,
        InterruptTurnWithInputParams as InterruptTurnWithInputParams,
        ListItemsParams as ListItemsParams,
        ListTurnsParams as ListTurnsParams,
        SteerInputParams as SteerInputParams,
        SubmitInputParams as SubmitInputParams,
        SubmitInputResult as SubmitInputResult,
        WithdrawInputParams as WithdrawInputParams,
        WithdrawInputResult as WithdrawInputResult,
    )
    from openvaala_lsp.protocol.api.query import (
        QueryColumn as QueryColumn,
        QueryParams as QueryParams,
        QueryResult as QueryResult,
    )
    from openvaala_lsp.protocol.api.sessions import (
        GetSessionByIdParams as GetSessionByIdParams,
        GetSessionContextUsageParams as GetSessionContextUsageParams,
        GetSessionDetailsParams as GetSessionDetailsParams,
        ItemTokens as ItemTokens,
        LastRequestUsage as LastRequestUsage,
        ListSessionsParams as ListSessionsParams,
        SessionContextUsage as SessionContextUsage,
        SessionDetails as SessionDetails,
        SetSessionModelParams as SetSessionModelParams,
    )
    from openvaala_lsp.protocol.api.subscriptions import (
        GetHooksParams as GetHooksParams,
        GetSessionSnapshotParams as GetSessionSnapshotParams,
        GetSessionSnapshotResult as GetSessionSnapshotResult,
        ListAgentsParams as ListAgentsParams,
        ListExecutorsParams as ListExecutorsParams,
        RunningConversations as RunningConversations,
        SubscribeConversationParams as SubscribeConversationParams,
        SubscribeConversationResult as SubscribeConversationResult,
        SubscribeRunningConversationsParams as SubscribeRunningConversationsParams,
        SubscribeRunningConversationsResult as SubscribeRunningConversationsResult,
        SubscribeSessionParams as SubscribeSessionParams,
        SubscribeSessionResult as SubscribeSessionResult,
        UnsubscribeParams as UnsubscribeParams,
    )
    from openvaala_lsp.protocol.api.workspace import (
        GetWorkspaceDirectoriesParams as GetWorkspaceDirectoriesParams,
        OpenTerminalWorkspaceParams as OpenTerminalWorkspaceParams,
        ResolveWorkspaceDirectoryParams as ResolveWorkspaceDirectoryParams,
        ResolveWorkspaceDirectoryResult as ResolveWorkspaceDirectoryResult,
        TerminalWorkspace as TerminalWorkspace,
        Workspace as Workspace,
        WorkspaceDirectories as WorkspaceDirectories,
    )
else:

    def __getattr__(name: str) -> Any:  # hidden from type checkers, which see the imports above
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # found directly from now on
        return value
