"""The runtime: one async method per `Runtime` method of the seed, typed results, typed errors.

Every method takes the calling `Client` first (its workspace folders, environment and
subscription sink) and the request second. Nothing here knows about JSON-RPC.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import (
    Conversation,
    ConversationId,
    ConversationListEntry,
    ErrorInfo,
    ExecutorSettings,
    LoggedItem,
    ModelSelection,
    Order,
    Page,
    Session,
    SessionRuntimeInfo,
    Turn,
    new_id,
    utcnow,
)
from openvaala_lsp.runtime import api, events, subscriptions
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.errors import (
    ConversationNotFound,
    InvalidParams,
    NotFound,
    RuntimeStopped,
    SessionNotFound,
)
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.runtime.workspace import containing_folder, list_subdirectories, resolve_directory
from openvaala_lsp.storage.interfaces import InvalidCursor, Storage

P = TypeVar("P")

DEFAULT_AGENT = "default"
LOCAL_EXECUTOR = "local"
MAX_TITLE_LENGTH = 1000
UNSUBSCRIBED = "unsubscribed"


def parse_environment(entries: Iterable[str]) -> dict[str, str]:
    """`["KEY=VALUE", ...]` (already validated by the request type) as a mapping."""
    return dict(entry.split("=", 1) for entry in entries)


def format_environment(environment: dict[str, str]) -> list[str]:
    return [f"{key}={value}" for key, value in sorted(environment.items())]


class OpenConversation:
    """A conversation the runtime holds loaded: where its tools run and who watches its sessions."""

    def __init__(self, conversation: Conversation, sessions: list[Session], environment: dict[str, str]) -> None:
        self.conversation = conversation
        self.sessions = {session.id: session for session in sessions}
        self.environment = environment

    def runtime_info(self, session: Session) -> SessionRuntimeInfo:
        return SessionRuntimeInfo(session=session)

    @property
    def busy(self) -> bool:
        return False


class Runtime:
    def __init__(self, storage: Storage, definitions: Definitions | None = None) -> None:
        self._storage = storage
        self._definitions = definitions or Definitions()
        self._open: dict[ConversationId, OpenConversation] = {}
        self._conversation_subs: dict[ConversationId, set[Subscription]] = collections.defaultdict(set)
        # read-modify-write of one conversation's record is serialised so no update is lost
        self._record_locks: dict[ConversationId, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._stopped = False

    @classmethod
    async def start(cls, storage: Storage, definitions: Definitions | None = None) -> Runtime:
        """A runtime over `storage`; turns a previous process left running read `interrupted`."""
        await storage.interrupt_running_turns(utcnow())
        return cls(storage, definitions)

    @property
    def stopped(self) -> bool:
        return self._stopped

    async def stop(self) -> None:
        """Stops the runtime: subscriptions close with `runtimeStopped`, storage is flushed and closed."""
        if self._stopped:
            return
        self._stopped = True
        reason = ErrorInfo(kind=RuntimeStopped.kind, message=RuntimeStopped.default_message)
        for subs in list(self._conversation_subs.values()):
            for sub in list(subs):
                sub.close(reason)
        await self._storage.close()

    def _check_running(self) -> None:
        if self._stopped:
            raise RuntimeStopped()

    # Conversations

    async def create_conversation(self, client: Client, request: api.CreateConversationRequest) -> Conversation:
        self._check_running()
        if request.ephemeral:
            raise InvalidParams("ephemeral conversations are not supported by this version @ $.ephemeral")
        agent_name = self._agent_name(request.agent_name)
        model = self._check_model(request.model, "$.model.model")
        executor_settings = await self._resolve_executor_settings(client, request.executor_settings)
        now = utcnow()
        conversation = Conversation(
            id=new_id("conv"),
            agent_name=agent_name,
            created_at=now,
            updated_at=now,
            executor_settings=executor_settings,
            model=model,
        )
        session = Session(
            id=new_id("sess"),
            conversation_id=conversation.id,
            agent_name=agent_name,
            model=model or ModelSelection(),
            created_at=now,
        )
        await self._storage.create_conversation(conversation, session)
        environment = self._environment(client, request.environment)
        self._open[conversation.id] = OpenConversation(conversation, [session], environment)
        return conversation

    async def open_conversation(self, client: Client, request: api.OpenConversationRequest) -> Conversation:
        self._check_running()
        conversation = await self._conversation(request.conversation_id)
        opened = self._open.get(conversation.id)
        if opened is None:
            sessions = await self._all_sessions(conversation.id)
            opened = OpenConversation(conversation, sessions, self._environment(client, request.environment))
            self._open[conversation.id] = opened
        elif request.environment is not None:
            opened.environment = self._environment(client, request.environment)
        return conversation

    async def get_conversation(self, client: Client, request: api.GetConversationRequest) -> Conversation:
        self._check_running()
        return await self._conversation(request.conversation_id)

    async def is_conversation_open(
        self, client: Client, request: api.GetConversationRequest
    ) -> api.IsConversationOpenResult:
        self._check_running()
        await self._conversation(request.conversation_id)
        return api.IsConversationOpenResult(open=request.conversation_id in self._open)

    async def list_conversations(
        self, client: Client, request: api.ListConversationsRequest
    ) -> Page[ConversationListEntry, str]:
        self._check_running()
        page = await self._page(
            self._storage.list_conversations(
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=request.order,
                archived=request.archived,
                query=request.query or None,
            )
        )
        for entry in page.items:
            opened = self._open.get(entry.conversation.id)
            entry.running = opened is not None and opened.busy
        return page

    async def delete_conversation(self, client: Client, request: api.DeleteConversationRequest) -> api.Empty:
        self._check_running()
        async with self._record_locks[request.conversation_id]:
            await self._conversation(request.conversation_id)
            self._open.pop(request.conversation_id, None)
            reason = ErrorInfo(kind=ConversationNotFound.kind, message="conversation deleted")
            for sub in list(self._conversation_subs.get(request.conversation_id, ())):
                sub.close(reason)
            await self._storage.delete_conversation(request.conversation_id)
        self._record_locks.pop(request.conversation_id, None)
        return api.Empty()

    async def set_conversation_archived(
        self, client: Client, request: api.SetConversationArchivedRequest
    ) -> Conversation:
        self._check_running()
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.archived = request.archived
            return await self._save_conversation(conversation)

    async def set_conversation_title(self, client: Client, request: api.SetConversationTitleRequest) -> api.Empty:
        self._check_running()
        title = request.title.strip()
        if len(title) > MAX_TITLE_LENGTH:
            raise InvalidParams(f"longer than {MAX_TITLE_LENGTH} characters @ $.title")
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.title = title
            await self._save_conversation(conversation, announce=False)
        self._publish_conversation(conversation.id, events.TitleChanged(title=title))
        return api.Empty()

    async def set_conversation_executor_settings(
        self, client: Client, request: api.SetConversationExecutorSettingsRequest
    ) -> Conversation:
        self._check_running()
        settings = await self._resolve_executor_settings(client, request.executor_settings)
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.executor_settings = settings
            return await self._save_conversation(conversation)

    # Sessions, turns, items

    async def list_sessions(self, client: Client, request: api.ListSessionsRequest) -> Page[Session, str]:
        self._check_running()
        await self._conversation(request.conversation_id)
        return await self._page(
            self._storage.list_sessions(
                request.conversation_id,
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=Order.ASC,
            )
        )

    async def get_session_by_id(self, client: Client, request: api.GetSessionByIdRequest) -> Session:
        self._check_running()
        session = await self._storage.get_session(request.session_id)
        if session is None:
            raise SessionNotFound(f"session not found: {request.session_id}")
        return session

    async def get_session_details(self, client: Client, request: api.SessionRequest) -> api.SessionDetails:
        self._check_running()
        session = await self._session(request.conversation_id, request.session_id)
        calls = await self._storage.list_model_calls(request.conversation_id, session.id)
        usage = sum((call.usage for call in calls), start=type(calls[0].usage)()) if calls else None
        turn_count = 0
        cursor: str | None = None
        while True:
            page = await self._storage.list_turns(
                request.conversation_id, session_id=session.id, cursor=cursor, limit=api.MAX_LIMIT, order=Order.ASC
            )
            turn_count += len(page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        info = self._runtime_info(session)
        return api.SessionDetails(
            session=session,
            info=info,
            turn_count=turn_count,
            item_count=await self._storage.count_items(request.conversation_id, session.id),
            usage=usage or info.usage,
            pending_inputs=[],
        )

    async def list_turns(self, client: Client, request: api.ListTurnsRequest) -> Page[Turn, str]:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        return await self._page(
            self._storage.list_turns(
                request.conversation_id,
                session_id=request.session_id,
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=request.order,
            )
        )

    async def get_turns(self, client: Client, request: api.GetTurnsRequest) -> api.GetTurnsResult:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        turns = await self._storage.get_turns(request.conversation_id, request.turn_ids)
        found = {turn.id for turn in turns}
        missing = [turn_id for turn_id in request.turn_ids if turn_id not in found]
        if missing:
            raise NotFound(f"turn not found: {', '.join(missing)}")
        if request.session_id is not None:
            turns = [turn for turn in turns if turn.session_id == request.session_id]
        return api.GetTurnsResult(turns=turns)

    async def list_items(self, client: Client, request: api.ListItemsRequest) -> Page[LoggedItem, int]:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        if request.cursor is not None and request.cursor < 0:
            raise InvalidParams("must not be negative @ $.cursor")
        return await self._storage.list_items(
            request.conversation_id,
            session_id=request.session_id,
            cursor=request.cursor,
            limit=request.limit or api.DEFAULT_LIMIT,
            order=request.order,
        )

    # Subscriptions

    async def subscribe_conversation(
        self, client: Client, request: api.SubscribeConversationRequest
    ) -> api.SubscribeConversationResult:
        self._check_running()
        conversation = await self._conversation(request.conversation_id)
        sessions = await self._all_sessions(conversation.id)
        subs = self._conversation_subs[conversation.id]
        sub = Subscription(
            subscriptions.CONVERSATION,
            client.client_id,
            key=conversation.id,
            on_close=lambda s: self._forget(client, s, subs),
        )
        self._attach(client, sub, subs)
        return api.SubscribeConversationResult(
            subscription_id=sub.id,
            title=conversation.title,
            sessions=[self._runtime_info(session) for session in sessions],
        )

    async def unsubscribe(self, client: Client, request: api.UnsubscribeRequest) -> api.Empty:
        self._check_running()
        sub = client.subscriptions.get(request.subscription_id)
        if sub is None:
            raise NotFound(f"subscription not found: {request.subscription_id}")
        sub.close(ErrorInfo(kind=UNSUBSCRIBED, message="unsubscribed"))
        return api.Empty()

    def disconnect(self, client: Client) -> None:
        """The client went away: its subscriptions end without notice."""
        for sub in list(client.subscriptions.values()):
            sub.close(ErrorInfo(kind=UNSUBSCRIBED, message="client disconnected"))

    async def is_idle(self, client: Client, request: api.NoParams) -> api.IsIdleResult:
        self._check_running()
        return api.IsIdleResult(idle=not any(opened.busy for opened in self._open.values()))

    # Workspace

    async def get_workspace_directories(
        self, client: Client, request: api.GetWorkspaceDirectoriesRequest
    ) -> api.WorkspaceDirectories:
        self._check_running()
        self._check_executor(request.executor_id, "$.executorId")
        folders = await client.workspace_folders()
        directory = resolve_directory(request.directory, folders, request.base_directory)
        if request.base_directory:
            base = resolve_directory(request.base_directory, folders)
        else:
            holder = containing_folder(directory, folders)
            base = holder.path if holder else directory
        return api.WorkspaceDirectories(
            base_directory=base,
            directory=directory,
            entries=list_subdirectories(directory, folders),
            workspace_folders=folders,
        )

    async def resolve_workspace_directory(
        self, client: Client, request: api.ResolveWorkspaceDirectoryRequest
    ) -> api.ResolveWorkspaceDirectoryResult:
        self._check_running()
        self._check_executor(request.executor_id, "$.executorId")
        folders = await client.workspace_folders()
        return api.ResolveWorkspaceDirectoryResult(
            directory=resolve_directory(request.directory, folders, request.base_directory)
        )

    async def open_terminal_workspace(
        self, client: Client, request: api.OpenTerminalWorkspaceRequest
    ) -> api.TerminalWorkspace:
        self._check_running()
        executor_id = self._check_executor(request.executor_id, "$.executorId")
        folders = await client.workspace_folders()
        directory = resolve_directory(request.directory, folders)
        holder = containing_folder(directory, folders)
        return api.TerminalWorkspace(
            directory=directory,
            executor_id=executor_id,
            workspace=api.Workspace(
                root=holder.path if holder else directory,
                environment=format_environment(self._environment(client, request.environment)),
            ),
        )

    # Helpers

    async def _conversation(self, conversation_id: ConversationId) -> Conversation:
        conversation = await self._storage.get_conversation(conversation_id)
        if conversation is None:
            raise ConversationNotFound(f"conversation not found: {conversation_id}")
        return conversation

    async def _session(self, conversation_id: ConversationId, session_id: str) -> Session:
        await self._conversation(conversation_id)
        session = await self._storage.get_session(session_id)
        if session is None or session.conversation_id != conversation_id:
            raise SessionNotFound(f"session not found in conversation {conversation_id}: {session_id}")
        return session

    async def _check_scope(self, conversation_id: ConversationId, session_id: str | None) -> None:
        if session_id is None:
            await self._conversation(conversation_id)
        else:
            await self._session(conversation_id, session_id)

    async def _all_sessions(self, conversation_id: ConversationId) -> list[Session]:
        sessions: list[Session] = []
        cursor: str | None = None
        while True:
            page = await self._storage.list_sessions(
                conversation_id, cursor=cursor, limit=api.MAX_LIMIT, order=Order.ASC
            )
            sessions.extend(page.items)
            if page.next_cursor is None:
                return sessions
            cursor = page.next_cursor

    async def _page(self, call: Awaitable[P]) -> P:
        try:
            return await call
        except InvalidCursor as exc:
            raise InvalidParams(f"{exc} @ $.cursor") from None

    def _runtime_info(self, session: Session) -> SessionRuntimeInfo:
        opened = self._open.get(session.conversation_id)
        return opened.runtime_info(session) if opened else SessionRuntimeInfo(session=session)

    async def _save_conversation(self, conversation: Conversation, *, announce: bool = True) -> Conversation:
        conversation.updated_at = utcnow()
        await self._storage.update_conversation(conversation)
        opened = self._open.get(conversation.id)
        if opened is not None:
            opened.conversation = conversation
        if announce:
            self._publish_conversation(conversation.id, events.ConversationUpdated(conversation=conversation))
        return conversation

    def _publish_conversation(self, conversation_id: ConversationId, event: events.ConversationEvent) -> None:
        for sub in list(self._conversation_subs.get(conversation_id, ())):
            sub.publish(event)

    def _attach(self, client: Client, sub: Subscription, registry: set[Subscription]) -> None:
        registry.add(sub)
        client.subscriptions[sub.id] = sub
        client.attach(sub)

    def _forget(self, client: Client, sub: Subscription, registry: set[Subscription]) -> None:
        registry.discard(sub)
        client.subscriptions.pop(sub.id, None)

    def _agent_name(self, requested: str) -> str:
        names = [agent.name for agent in self._definitions.agents]
        if not requested:
            return names[0] if names else DEFAULT_AGENT
        if requested not in names and not (requested == DEFAULT_AGENT and not names):
            raise NotFound(f"agent not found: {requested}")
        return requested

    def _check_model(self, selection: ModelSelection | None, path: str) -> ModelSelection | None:
        if selection is None or selection.model is None:
            return selection
        ref = selection.model
        if not any(m.ref == ref for m in self._definitions.models):
            raise NotFound(f"model not found: {ref.provider}/{ref.name} @ {path}")
        return selection

    def _check_executor(self, executor_id: str | None, path: str) -> str:
        if not executor_id:
            return LOCAL_EXECUTOR
        known = {LOCAL_EXECUTOR} | {executor.id for executor in self._definitions.executors}
        if executor_id not in known:
            raise NotFound(f"executor not found: {executor_id} @ {path}")
        return executor_id

    async def _resolve_executor_settings(self, client: Client, settings: ExecutorSettings | None) -> ExecutorSettings:
        settings = settings or ExecutorSettings()
        executor_id = self._check_executor(settings.executor_id, "$.executorSettings.executorId")
        folders = await client.workspace_folders()
        return ExecutorSettings(executor_id=executor_id, directory=resolve_directory(settings.directory, folders))

    def _environment(self, client: Client, entries: list[str] | None) -> dict[str, str]:
        return parse_environment(entries) if entries is not None else dict(client.environment)
