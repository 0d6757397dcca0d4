"""The runtime: one async method per `Runtime` method of the seed, typed results, typed errors.

Every method takes the calling `Client` first (its workspace folders, environment and subscription
sink) and the params second. Nothing here knows about JSON-RPC. `Runtime` is a thin facade: each
method checks that the runtime runs and hands over to one of the services below, which share one
`RuntimeState`:

| service | methods |
|---|---|
| `conversations.Conversations` | create, open, get, list, delete, archive, title, executor settings |
| `forks.Forks` | fork |
| `inputs.Inputs` | submit, steer, withdraw, interrupt, compact, answer approvals |
| `history.History` | sessions, turns, items, details, context usage, SQL |
| `subscribing.Subscribing` | subscribe to conversations, sessions, running conversations |
| `configuration.Configuration` | definitions, agents, models, hooks, skills, MCP servers, session model |
| `workspace.Workspace` | workspace directories, terminals |
| `turn_files.TurnFiles` | a turn's diff, reverting turns |
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import (
    Conversation,
    ConversationListEntry,
    ErrorInfo,
    LoggedItem,
    Page,
    Session,
    Turn,
    utcnow,
)
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import RuntimeStopped
from openvaala_lsp.runtime import configuration
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.configuration import Configuration
from openvaala_lsp.runtime.conversations import Conversations
from openvaala_lsp.runtime.forks import Forks
from openvaala_lsp.runtime.history import History
from openvaala_lsp.runtime.inputs import Inputs
from openvaala_lsp.runtime.state import Lifecycle, RuntimeOptions, RuntimeState
from openvaala_lsp.runtime.subscribing import Subscribing
from openvaala_lsp.runtime.titles import Titles
from openvaala_lsp.runtime.turn_files import TurnFiles
from openvaala_lsp.runtime.workspace import Workspace
from openvaala_lsp.storage.interfaces import Storage

P = ParamSpec("P")
R = TypeVar("R")


def _running(
    method: Callable[Concatenate[Runtime, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Runtime, P], Coroutine[Any, Any, R]]:
    """Refuses the call with `runtimeStopped` once the runtime stops."""

    @functools.wraps(method)
    async def checked(self: Runtime, /, *args: P.args, **kwargs: P.kwargs) -> R:
        self.state.ensure_running()
        return await method(self, *args, **kwargs)

    return checked


class Runtime:
    def __init__(self, storage: Storage, definitions: Definitions | None = None, **options: Any) -> None:
        self.state = RuntimeState(storage, definitions, RuntimeOptions(**options))
        self.conversations = Conversations(self.state)
        self.forks = Forks(self.state)
        self.inputs = Inputs(self.state)
        self.history = History(self.state)
        self.subscribing = Subscribing(self.state)
        self.configuration = Configuration(self.state)
        self.workspace = Workspace(self.state)
        self.titles = Titles(self.state)
        self.turn_files = TurnFiles(self.state)

    @classmethod
    async def start(cls, storage: Storage, definitions: Definitions | None = None, **options: Any) -> Runtime:
        """A runtime over `storage`; turns a previous process left running read `interrupted`.
        `options` are `RuntimeOptions`' fields."""
        await storage.interrupt_running_turns(utcnow())
        runtime = cls(storage, definitions, **options)
        if definitions is None:
            runtime.state.source.explicit = await configuration.kept_definitions(runtime.state.options)
        return runtime

    @property
    def storage(self) -> Storage:
        return self.state.storage

    @property
    def stopped(self) -> bool:
        return self.state.lifecycle is not Lifecycle.RUNNING

    async def stop(self) -> None:
        """Stops the runtime: running turns end interrupted and are saved, subscriptions close with
        `runtimeStopped`, every task the runtime started is cancelled, storage is flushed and closed."""
        state = self.state
        if state.lifecycle is not Lifecycle.RUNNING:
            return
        state.lifecycle = Lifecycle.STOPPING
        await asyncio.gather(*(opened.stop() for opened in state.open.values()))
        state.live.close_all(ErrorInfo(kind=RuntimeStopped.kind, message=RuntimeStopped.default_message))
        await state.tasks.close()
        await state.model_clients.close()
        await state.sandboxes.close()
        await state.executors.close()
        await state.source.close()
        await state.storage.close()
        await asyncio.to_thread(state.telemetry.close)  # the last spans and metrics, within seconds
        state.lifecycle = Lifecycle.STOPPED

    # Clients (not wire methods: the connection calls them)

    def connect(self, client: Client) -> None:
        self.state.live.connect(client)

    def disconnect(self, client: Client) -> None:
        self.state.live.disconnect(client)
        self.history.disconnect(client)

    # Conversations

    # What turns did to the workspace

    @_running
    async def get_turn_diff(self, client: Client, params: api.GetTurnDiffParams) -> api.GetTurnDiffResult:
        return await self.turn_files.get_turn_diff(client, params)

    @_running
    async def revert_turn(self, client: Client, params: api.RevertTurnParams) -> api.RevertTurnResult:
        return await self.turn_files.revert_turn(client, params)

    @_running
    async def create_conversation(self, client: Client, params: api.CreateConversationParams) -> Conversation:
        return await self.conversations.create(client, params)

    @_running
    async def open_conversation(self, client: Client, params: api.OpenConversationParams) -> Conversation:
        return await self.conversations.open(client, params)

    @_running
    async def get_conversation(self, client: Client, params: api.GetConversationParams) -> Conversation:
        return await self.conversations.get(client, params)

    @_running
    async def is_conversation_open(
        self, client: Client, params: api.IsConversationOpenParams
    ) -> api.IsConversationOpenResult:
        return await self.conversations.is_open(client, params)

    @_running
    async def list_conversations(
        self, client: Client, params: api.ListConversationsParams
    ) -> Page[ConversationListEntry, str]:
        return await self.conversations.list_entries(client, params)

    @_running
    async def delete_conversation(self, client: Client, params: api.DeleteConversationParams) -> api.EmptyResult:
        return await self.conversations.delete(client, params)

    @_running
    async def fork_conversation(self, client: Client, params: api.ForkConversationParams) -> Conversation:
        return await self.forks.fork(client, params)

    @_running
    async def set_conversation_archived(
        self, client: Client, params: api.SetConversationArchivedParams
    ) -> Conversation:
        return await self.conversations.set_archived(client, params)

    @_running
    async def set_conversation_title(self, client: Client, params: api.SetConversationTitleParams) -> api.EmptyResult:
        return await self.conversations.set_title(client, params)

    @_running
    async def set_conversation_executor_settings(
        self, client: Client, params: api.SetConversationExecutorSettingsParams
    ) -> Conversation:
        return await self.conversations.set_executor_settings(client, params)

    # Inputs and turns

    @_running
    async def submit_input(self, client: Client, params: api.SubmitInputParams) -> api.SubmitInputResult:
        return await self.inputs.submit(client, params)

    @_running
    async def steer_input(self, client: Client, params: api.SteerInputParams) -> api.EmptyResult:
        return await self.inputs.steer(client, params)

    @_running
    async def withdraw_input(self, client: Client, params: api.WithdrawInputParams) -> api.WithdrawInputResult:
        return await self.inputs.withdraw(client, params)

    @_running
    async def interrupt_turn(self, client: Client, params: api.InterruptTurnParams) -> api.InterruptTurnResult:
        return await self.inputs.interrupt(client, params)

    @_running
    async def answer_approval(self, client: Client, params: api.AnswerApprovalParams) -> api.EmptyResult:
        return await self.inputs.answer_approval(client, params)

    @_running
    async def interrupt_turn_with_input(
        self, client: Client, params: api.InterruptTurnWithInputParams
    ) -> api.EmptyResult:
        return await self.inputs.interrupt_with(client, params)

    @_running
    async def compact_context(self, client: Client, params: api.CompactContextParams) -> api.CompactContextResult:
        return await self.inputs.compact(client, params)

    @_running
    async def is_idle(self, client: Client, params: api.IsIdleParams) -> api.IsIdleResult:
        return api.IsIdleResult(idle=not any(opened.busy for opened in self.state.open.values()))

    # History

    @_running
    async def list_sessions(self, client: Client, params: api.ListSessionsParams) -> Page[Session, str]:
        return await self.history.list_sessions(client, params)

    @_running
    async def get_session_by_id(self, client: Client, params: api.GetSessionByIdParams) -> Session:
        return await self.history.get_session_by_id(client, params)

    @_running
    async def get_session_details(self, client: Client, params: api.GetSessionDetailsParams) -> api.SessionDetails:
        return await self.history.get_session_details(client, params)

    @_running
    async def get_session_context_usage(
        self, client: Client, params: api.GetSessionContextUsageParams
    ) -> api.SessionContextUsage:
        return await self.history.get_session_context_usage(client, params)

    @_running
    async def list_turns(self, client: Client, params: api.ListTurnsParams) -> Page[Turn, str]:
        return await self.history.list_turns(client, params)

    @_running
    async def get_turns(self, client: Client, params: api.GetTurnsParams) -> api.GetTurnsResult:
        return await self.history.get_turns(client, params)

    @_running
    async def list_items(self, client: Client, params: api.ListItemsParams) -> Page[LoggedItem, int]:
        return await self.history.list_items(client, params)

    @_running
    async def query(self, client: Client, params: api.QueryParams) -> api.QueryResult:
        return await self.history.query(client, params)

    @_running
    async def export_usage(self, client: Client, params: api.ExportUsageParams) -> api.ExportUsageResult:
        return await self.history.export_usage(client, params)

    # Subscriptions

    @_running
    async def subscribe_conversation(
        self, client: Client, params: api.SubscribeConversationParams
    ) -> api.SubscribeConversationResult:
        return await self.subscribing.conversation(client, params)

    @_running
    async def subscribe_session(self, client: Client, params: api.SubscribeSessionParams) -> api.SubscribeSessionResult:
        return await self.subscribing.session(client, params)

    @_running
    async def get_session_snapshot(
        self, client: Client, params: api.GetSessionSnapshotParams
    ) -> api.GetSessionSnapshotResult:
        return await self.subscribing.snapshot_page(client, params)

    @_running
    async def subscribe_running_conversations(
        self, client: Client, params: api.SubscribeRunningConversationsParams
    ) -> api.SubscribeRunningConversationsResult:
        return await self.subscribing.running(client, params)

    @_running
    async def unsubscribe(self, client: Client, params: api.UnsubscribeParams) -> api.EmptyResult:
        return await self.subscribing.unsubscribe(client, params)

    # Configuration

    @_running
    async def set_definitions(self, client: Client, params: Definitions) -> api.SetDefinitionsResult:
        return await self.configuration.set_definitions(client, params)

    @_running
    async def list_agents(self, client: Client, params: api.ListAgentsParams) -> api.ListAgentsResult:
        return await self.configuration.list_agents(client, params)

    @_running
    async def list_models(self, client: Client, params: api.ListModelsParams) -> api.ModelList:
        return await self.configuration.list_models(client, params)

    @_running
    async def list_executors(self, client: Client, params: api.ListExecutorsParams) -> api.ListExecutorsResult:
        return await self.configuration.list_executors(client, params)

    @_running
    async def get_hooks(self, client: Client, params: api.GetHooksParams) -> api.GetHooksResult:
        return await self.configuration.get_hooks(client, params)

    @_running
    async def get_skills(self, client: Client, params: api.GetSkillsParams) -> api.GetSkillsResult:
        return await self.configuration.get_skills(client, params)

    @_running
    async def set_session_model(self, client: Client, params: api.SetSessionModelParams) -> Session:
        return await self.configuration.set_session_model(client, params)

    @_running
    async def get_mcp_servers(self, client: Client, params: api.GetMcpServersParams) -> api.GetMcpServersResult:
        return await self.configuration.get_mcp_servers(client, params)

    @_running
    async def set_client_mcp_servers(self, client: Client, params: api.SetClientMcpServersParams) -> api.EmptyResult:
        return await self.configuration.set_client_mcp_servers(client, params)

    # Workspace

    @_running
    async def get_workspace_directories(
        self, client: Client, params: api.GetWorkspaceDirectoriesParams
    ) -> api.WorkspaceDirectories:
        return await self.workspace.get_directories(client, params)

    @_running
    async def resolve_workspace_directory(
        self, client: Client, params: api.ResolveWorkspaceDirectoryParams
    ) -> api.ResolveWorkspaceDirectoryResult:
        return await self.workspace.resolve_directory(client, params)

    @_running
    async def open_terminal_workspace(
        self, client: Client, params: api.OpenTerminalWorkspaceParams
    ) -> api.TerminalWorkspace:
        return await self.workspace.open_terminal(client, params)
