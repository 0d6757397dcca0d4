"""Requests and results of the runtime API: one request type per `Runtime` method of the seed.

Field names follow the Go structs in snake_case; the protocol layer renames them to lowerCamelCase.
Fields with a default are optional on the wire.

The types live in one module per part of the API; this package offers them all (`api.SubmitInputParams`).
"""

from __future__ import annotations

from openvaala_lsp.protocol.api.checkpoints import (
    GetTurnDiffParams as GetTurnDiffParams,
    GetTurnDiffResult as GetTurnDiffResult,
    RestoreFiles as RestoreFiles,
    RevertTurnParams as RevertTurnParams,
    RevertTurnResult as RevertTurnResult,
)
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
