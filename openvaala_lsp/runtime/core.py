"""The runtime: one async method per `Runtime` method of the seed, typed results, typed errors.

Every method takes the calling `Client` first (its workspace folders, environment and
subscription sink) and the request second. Nothing here knows about JSON-RPC.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import copy
from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from openvaala_lsp.definitions import Definitions, ModelDefinition
from openvaala_lsp.hooks import validate_hooks
from openvaala_lsp.mcp.model import MCPServerInfo
from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    ContextUsage,
    Conversation,
    ConversationId,
    ConversationListEntry,
    ErrorInfo,
    ExecutorSettings,
    Item,
    ItemStatus,
    ItemType,
    LoggedItem,
    ModelRef,
    ModelSelection,
    Order,
    Page,
    PendingInput,
    Session,
    SessionRuntimeInfo,
    Turn,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import api, events
from openvaala_lsp.protocol.errors import (
    ConversationNotFound,
    ConversationNotOpen,
    ConversationReconfigured,
    InvalidParams,
    InvalidState,
    NoModelConfigured,
    NotFound,
    RuntimeStopped,
    SessionNotFound,
)
from openvaala_lsp.runtime import catalog, context, subscriptions
from openvaala_lsp.runtime.catalog import LOCAL_EXECUTOR
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.conversation import OpenConversation, session_items
from openvaala_lsp.runtime.definitions_source import DefinitionsSource
from openvaala_lsp.runtime.models import Providers, effective_selection, resolve_model
from openvaala_lsp.runtime.skills import agent_skills
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.runtime.workspace import (
    containing_folder,
    folder_key,
    list_subdirectories,
    real_folders,
    resolve_directory,
)
from openvaala_lsp.storage.errors import QueryError, StorageClosedError
from openvaala_lsp.storage.interfaces import InvalidCursor, Storage
from openvaala_lsp.tools.registry import local_tools

P = TypeVar("P")

MAX_TITLE_LENGTH = 1000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
UNSUBSCRIBED = "unsubscribed"


def parse_environment(entries: Iterable[str]) -> dict[str, str]:
    """`["KEY=VALUE", ...]` (already validated by the request type) as a mapping."""
    return dict(entry.split("=", 1) for entry in entries)


def format_environment(environment: dict[str, str]) -> list[str]:
    return [f"{key}={value}" for key, value in sorted(environment.items())]


class Runtime:
    def __init__(
        self,
        storage: Storage,
        definitions: Definitions | None = None,
        *,
        max_image_bytes: int = MAX_IMAGE_BYTES,
        config_dir: Path | None = None,
        watch_interval: float = 1.0,
    ) -> None:
        self.storage = storage
        # an explicit set (setDefinitions, tests) replaces the configuration files
        self.source = DefinitionsSource(
            config_dir=config_dir, on_change=self._definitions_changed, watch_interval=watch_interval
        )
        self.source.explicit = definitions
        self.providers = Providers()
        self.max_image_bytes = max_image_bytes
        self._open: dict[ConversationId, OpenConversation] = {}
        self._conversation_subs: dict[ConversationId, set[Subscription]] = collections.defaultdict(set)
        self._running_subs: set[Subscription] = set()
        self._clients: dict[str, Client] = {}
        self._running: frozenset[ConversationId] = frozenset()
        # read-modify-write of one conversation's record is serialised so no update is lost
        self._record_locks: dict[ConversationId, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._stopped = False

    @classmethod
    async def start(cls, storage: Storage, definitions: Definitions | None = None, **options: Any) -> Runtime:
        """A runtime over `storage`; turns a previous process left running read `interrupted`."""
        await storage.interrupt_running_turns(utcnow())
        return cls(storage, definitions, **options)

    @property
    def stopped(self) -> bool:
        return self._stopped

    async def stop(self) -> None:
        """Stops the runtime: subscriptions close with `runtimeStopped`, storage is flushed and closed."""
        if self._stopped:
            return
        self._stopped = True
        await asyncio.gather(*(opened.stop() for opened in self._open.values()))
        reason = ErrorInfo(kind=RuntimeStopped.kind, message=RuntimeStopped.default_message)
        subs = [sub for registry in self._conversation_subs.values() for sub in registry]
        subs += [sub for opened in self._open.values() for r in opened.runners.values() for sub in r.subscribers]
        for sub in [*subs, *self._running_subs]:
            sub.close(reason)
        await self.providers.close()
        await self.source.close()
        await self.storage.close()

    def _check_running(self) -> None:
        if self._stopped:
            raise RuntimeStopped()

    # Conversations

    async def create_conversation(self, client: Client, request: api.CreateConversationParams) -> Conversation:
        self._check_running()
        if request.ephemeral:
            raise InvalidParams("ephemeral conversations are not supported by this version @ $.ephemeral")
        definitions = await self._definitions(client)
        agent_name = self._agent_name(definitions, request.agent_name)
        model = self._check_model(definitions, request.model, "$.model.model")
        executor_settings = await self._resolve_executor_settings(client, definitions, request.executor_settings)
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
            model=effective_selection(definitions, model, agent_name),
            created_at=now,
        )
        await self.storage.create_conversation(conversation, session)
        environment = self._environment(client, request.environment)
        folders = real_folders(await client.workspace_folders())
        self._open[conversation.id] = OpenConversation(self, conversation, [session], environment, folders)
        return conversation

    async def open_conversation(self, client: Client, request: api.OpenConversationParams) -> Conversation:
        self._check_running()
        # serialised per conversation: two editors opening it at once must share one OpenConversation
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            opened = self._open.get(conversation.id)
            if opened is None:
                environment = self._environment(client, request.environment)
                self._open[conversation.id] = await self._load(client, conversation, environment)
            elif request.environment is not None:
                opened.environment = self._environment(client, request.environment)
        return conversation

    async def _load(self, client: Client, conversation: Conversation, environment: dict[str, str]) -> OpenConversation:
        """A conversation as it was saved: its sessions, last ordinal and pending inputs."""
        sessions = await self._all_sessions(conversation.id)
        folders = real_folders(await client.workspace_folders())
        opened = OpenConversation(self, conversation, sessions, environment, folders)
        opened.last_ordinal = await self.storage.last_ordinal(conversation.id)
        pending = await self.storage.list_pending_inputs(conversation.id)
        logged = {li.item.id for li in await self.storage.get_items(conversation.id, [p.item.id for p in pending])}
        for entry in pending:
            runner = opened.runner(entry.item.session_id)
            if entry.item.id in logged:
                # taken into a turn just before a crash: the log has it, the queue must not
                await self.storage.remove_pending_input(conversation.id, entry.item.id)
            elif runner is not None:
                runner.pending.append(entry)
                if entry.input_id:
                    runner.input_ids[entry.input_id] = entry.item.id
        return opened

    async def get_conversation(self, client: Client, request: api.GetConversationParams) -> Conversation:
        self._check_running()
        return await self._conversation(request.conversation_id)

    async def is_conversation_open(
        self, client: Client, request: api.IsConversationOpenParams
    ) -> api.IsConversationOpenResult:
        self._check_running()
        await self._conversation(request.conversation_id)
        return api.IsConversationOpenResult(open=request.conversation_id in self._open)

    async def list_conversations(
        self, client: Client, request: api.ListConversationsParams
    ) -> Page[ConversationListEntry, str]:
        self._check_running()
        page = await self._page(
            self.storage.list_conversations(
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=request.order,
                archived=request.archived,
                query=request.query or None,
            )
        )
        for entry in page.items:
            opened = self._open.get(entry.conversation.id)
            entry.running = opened is not None and opened.running
        return page

    async def delete_conversation(self, client: Client, request: api.DeleteConversationParams) -> api.EmptyResult:
        self._check_running()
        async with self._record_locks[request.conversation_id]:
            await self._conversation(request.conversation_id)
            opened = self._open.pop(request.conversation_id, None)
            reason = ErrorInfo(kind=ConversationNotFound.kind, message="conversation deleted")
            subs = list(self._conversation_subs.get(request.conversation_id, ()))
            if opened is not None:
                await opened.stop()
                subs += [sub for runner in opened.runners.values() for sub in runner.subscribers]
            for sub in subs:
                sub.close(reason)
            self._update_running()
            await self.storage.delete_conversation(request.conversation_id)
        self._record_locks.pop(request.conversation_id, None)
        return api.EmptyResult()

    async def set_conversation_archived(
        self, client: Client, request: api.SetConversationArchivedParams
    ) -> Conversation:
        self._check_running()
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.archived = request.archived
            return await self._save_conversation(conversation)

    async def set_conversation_title(self, client: Client, request: api.SetConversationTitleParams) -> api.EmptyResult:
        self._check_running()
        title = request.title.strip()
        if len(title) > MAX_TITLE_LENGTH:
            raise InvalidParams(f"longer than {MAX_TITLE_LENGTH} characters @ $.title")
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.title = title
            await self._save_conversation(conversation, announce=False)
        self._publish_conversation(conversation.id, events.TitleChanged(title=title))
        return api.EmptyResult()

    async def set_conversation_executor_settings(
        self, client: Client, request: api.SetConversationExecutorSettingsParams
    ) -> Conversation:
        self._check_running()
        settings = await self._resolve_executor_settings(
            client, await self._definitions(client), request.executor_settings
        )
        async with self._record_locks[request.conversation_id]:
            conversation = await self._conversation(request.conversation_id)
            conversation.executor_settings = settings
            return await self._save_conversation(conversation)

    # Sessions, turns, items

    async def list_sessions(self, client: Client, request: api.ListSessionsParams) -> Page[Session, str]:
        self._check_running()
        await self._conversation(request.conversation_id)
        return await self._page(
            self.storage.list_sessions(
                request.conversation_id,
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=Order.ASC,
            )
        )

    async def get_session_by_id(self, client: Client, request: api.GetSessionByIdParams) -> Session:
        self._check_running()
        session = await self.storage.get_session(request.session_id)
        if session is None:
            raise SessionNotFound(f"session not found: {request.session_id}")
        return session

    async def get_session_details(self, client: Client, request: api.GetSessionDetailsParams) -> api.SessionDetails:
        self._check_running()
        session = await self._session(request.conversation_id, request.session_id)
        calls = await self.storage.list_model_calls(request.conversation_id, session.id)
        usage = sum((call.usage for call in calls), start=type(calls[0].usage)()) if calls else None
        turn_count = 0
        cursor: str | None = None
        while True:
            page = await self.storage.list_turns(
                request.conversation_id, session_id=session.id, cursor=cursor, limit=api.MAX_LIMIT, order=Order.ASC
            )
            turn_count += len(page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        info = self._runtime_info(session)
        opened = self._open.get(request.conversation_id)
        runner = opened.runner(session.id) if opened else None
        return api.SessionDetails(
            session=session,
            info=info,
            turn_count=turn_count,
            item_count=await self.storage.count_items(request.conversation_id, session.id),
            usage=usage or info.usage,
            pending_inputs=runner.pending_infos() if runner else [],
        )

    async def list_turns(self, client: Client, request: api.ListTurnsParams) -> Page[Turn, str]:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        return await self._page(
            self.storage.list_turns(
                request.conversation_id,
                session_id=request.session_id,
                cursor=request.cursor,
                limit=request.limit or api.DEFAULT_LIMIT,
                order=request.order,
            )
        )

    async def get_turns(self, client: Client, request: api.GetTurnsParams) -> api.GetTurnsResult:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        turns = await self.storage.get_turns(request.conversation_id, request.turn_ids)
        found = {turn.id for turn in turns}
        missing = [turn_id for turn_id in request.turn_ids if turn_id not in found]
        if missing:
            raise NotFound(f"turn not found: {', '.join(missing)}")
        if request.session_id is not None:
            turns = [turn for turn in turns if turn.session_id == request.session_id]
        return api.GetTurnsResult(turns=turns)

    async def list_items(self, client: Client, request: api.ListItemsParams) -> Page[LoggedItem, int]:
        self._check_running()
        await self._check_scope(request.conversation_id, request.session_id)
        if request.cursor is not None and request.cursor < 0:
            raise InvalidParams("must not be negative @ $.cursor")
        return await self.storage.list_items(
            request.conversation_id,
            session_id=request.session_id,
            cursor=request.cursor,
            limit=request.limit or api.DEFAULT_LIMIT,
            order=request.order,
        )

    # Subscriptions

    async def subscribe_conversation(
        self, client: Client, request: api.SubscribeConversationParams
    ) -> api.SubscribeConversationResult:
        self._check_running()
        conversation = await self._conversation(request.conversation_id)
        sessions = await self._all_sessions(conversation.id)
        subs = self._conversation_subs[conversation.id]
        sub = Subscription(
            subscriptions.CONVERSATION,
            client.client_id,
            capacity=client.max_buffered_events,
            key=conversation.id,
            on_close=lambda s: self._forget(client, s, subs),
        )
        self._attach(client, sub, subs)
        return api.SubscribeConversationResult(
            subscription_id=sub.id,
            title=conversation.title,
            sessions=[self._runtime_info(session) for session in sessions],
        )

    async def unsubscribe(self, client: Client, request: api.UnsubscribeParams) -> api.EmptyResult:
        self._check_running()
        sub = client.subscriptions.get(request.subscription_id)
        if sub is None:
            raise NotFound(f"subscription not found: {request.subscription_id}")
        sub.close(ErrorInfo(kind=UNSUBSCRIBED, message="unsubscribed"))
        return api.EmptyResult()

    def disconnect(self, client: Client) -> None:
        """The client went away: its subscriptions end without notice, its tools are withdrawn."""
        if self._clients.get(client.client_id) is client:
            del self._clients[client.client_id]
        for opened in self._open.values():
            entry = opened.client_servers.get(client.client_id)
            if entry is not None and entry[0] is client:
                del opened.client_servers[client.client_id]
        for sub in list(client.subscriptions.values()):
            sub.close(ErrorInfo(kind=UNSUBSCRIBED, message="client disconnected"))

    async def is_idle(self, client: Client, request: api.IsIdleParams) -> api.IsIdleResult:
        self._check_running()
        return api.IsIdleResult(idle=not any(opened.busy for opened in self._open.values()))

    async def query(self, client: Client, request: api.QueryParams) -> api.QueryResult:
        """SQL on the history; cancelling the call interrupts the query."""
        self._check_running()
        try:
            result = await self.storage.query(
                request.sql, request.parameters or [], request.limit or api.DEFAULT_QUERY_LIMIT
            )
        except QueryError as exc:
            raise InvalidParams(f"{exc.message} @ $.{exc.field}") from None
        except StorageClosedError:
            raise RuntimeStopped() from None
        return api.QueryResult(
            columns=[api.QueryColumn(name=c.name, type=c.type) for c in result.columns],
            rows=result.rows,
            truncated=result.truncated,
        )

    # Input and turns

    async def submit_input(self, client: Client, request: api.SubmitInputParams) -> api.SubmitInputResult:
        self._check_running()
        opened = await self._opened(request.conversation_id)
        self._check_content(request.content)
        runner = opened.main_runner()
        if request.input_id:
            known = runner.input_ids.get(request.input_id)
            known = known or await self.storage.find_input(request.conversation_id, request.input_id)
            # checked again after the await: a concurrent submit of the same inputId may have won
            known = runner.input_ids.get(request.input_id) or known
            if known is not None:
                return api.SubmitInputResult(item_id=known)
        resolve_model(opened.definitions(), runner.session.model, runner.session.agent_name)  # noModelConfigured
        item = Item(
            id=new_id("item"),
            conversation_id=request.conversation_id,
            session_id=runner.session.id,
            type=ItemType.USER_MESSAGE,
            status=ItemStatus.PENDING,
            created_at=utcnow(),
            content=request.content,
            from_=request.from_ or Address(kind=AddressKind.USER),
        )
        if request.input_id:
            runner.input_ids[request.input_id] = item.id  # before any await: the key is taken now
        await runner.add_input(PendingInput(item=item, mode=request.mode, input_id=request.input_id))
        return api.SubmitInputResult(item_id=item.id)

    async def steer_input(self, client: Client, request: api.SteerInputParams) -> api.EmptyResult:
        self._check_running()
        runner = (await self._opened(request.conversation_id)).main_runner()
        await runner.steer(request.item_id, request.turn_id)
        return api.EmptyResult()

    async def withdraw_input(self, client: Client, request: api.WithdrawInputParams) -> api.WithdrawInputResult:
        self._check_running()
        runner = (await self._opened(request.conversation_id)).main_runner()
        return api.WithdrawInputResult(items=[await runner.withdraw(request.item_id)])

    async def interrupt_turn(self, client: Client, request: api.InterruptTurnParams) -> api.InterruptTurnResult:
        self._check_running()
        opened = await self._opened(request.conversation_id)
        running = [runner for runner in opened.runners.values() if runner.active is not None]
        if not running:
            raise InvalidState("no turn is running")
        turn_ids = [runner.interrupt() for runner in running]
        return api.InterruptTurnResult(turn_id=turn_ids[0])

    async def interrupt_turn_with_input(
        self, client: Client, request: api.InterruptTurnWithInputParams
    ) -> api.EmptyResult:
        self._check_running()
        runner = (await self._opened(request.conversation_id)).main_runner()
        await runner.interrupt_with(request.item_id, request.turn_id)
        return api.EmptyResult()

    async def get_session_context_usage(
        self, client: Client, request: api.GetSessionContextUsageParams
    ) -> api.SessionContextUsage:
        self._check_running()
        session = await self._session(request.conversation_id, request.session_id)
        opened = self._open.get(request.conversation_id)
        runner = opened.runner(session.id) if opened else None
        items = runner.history if runner and runner.history is not None else None
        if items is None:
            items = await session_items(self.storage, session.conversation_id, session.id)
        definitions = opened.definitions() if opened else await self._definitions(client)
        model = self._model_or_none(definitions, session)
        window = model.context_window if model else 0
        tools = opened.tools(definitions, session.agent_name) if opened else local_tools()
        instructions = runner.instructions(definitions) if runner else ""
        last = runner.last_call if runner else None
        return api.SessionContextUsage(
            items=[api.ItemTokens(item_id=item.id, tokens=context.estimate_item(item)) for item in items],
            next_request=runner.next_request_usage(window) if runner else ContextUsage(window=window),
            system_tokens=context.estimate_text(instructions),
            threshold_tokens=self._threshold(model),
            tool_tokens=context.estimate_tools(context.tool_specs(tools)),
            window=window,
            last_request=(
                api.LastRequestUsage(
                    estimated_tokens=last.usage.input_tokens if last.usage_estimated else 0,
                    model=ModelRef(provider=last.provider, name=last.model),
                    model_call_id=last.id,
                    usage=last.usage,
                )
                if last
                else None
            ),
        )

    async def set_session_model(self, client: Client, request: api.SetSessionModelParams) -> Session:
        self._check_running()
        session = await self._session(request.conversation_id, request.session_id)
        opened = self._open.get(request.conversation_id)
        definitions = opened.definitions() if opened else await self._definitions(client)
        selection = self._check_model(definitions, request.model, "$.model.model")
        session.model = effective_selection(definitions, selection, session.agent_name)
        await self.storage.update_session(session)
        runner = opened.runner(session.id) if opened else None
        if runner is not None:
            runner.session = session  # takes effect at the next turn
            self.session_changed(opened, runner)  # type: ignore[arg-type]
        return session

    async def set_definitions(self, client: Client, request: Definitions) -> api.SetDefinitionsResult:
        """Replaces every definition. Busy conversations finish their turn with the old ones, then
        their subscriptions close with `conversationReconfigured`."""
        self._check_running()
        problems = validate_hooks(request.hooks)
        if problems:
            raise InvalidParams("; ".join(problems))
        busy = [cid for cid, opened in self._open.items() if opened.running]
        self.source.explicit = request
        for cid in busy:
            self._open[cid].reconfigured = True
        return api.SetDefinitionsResult(busy_conversation_ids=busy)

    # Definitions

    async def list_agents(self, client: Client, request: api.ListAgentsParams) -> api.ListAgentsResult:
        self._check_running()
        return api.ListAgentsResult(agents=catalog.agent_infos(await self._definitions(client)))

    async def list_models(self, client: Client, request: api.ListModelsParams) -> api.ModelList:
        self._check_running()
        return catalog.model_list(await self._definitions(client), request.agent_name)

    async def list_executors(self, client: Client, request: api.ListExecutorsParams) -> api.ListExecutorsResult:
        self._check_running()
        return api.ListExecutorsResult(executors=catalog.executor_details(await self._definitions(client)))

    async def get_hooks(self, client: Client, request: api.GetHooksParams) -> api.GetHooksResult:
        self._check_running()
        return api.GetHooksResult(hooks=catalog.hook_infos(await self._definitions(client)))

    async def get_skills(self, client: Client, request: api.GetSkillsParams) -> api.GetSkillsResult:
        """The skills an agent sees: of the conversation's agent and workspace when a conversation is
        given, else of `agentName` (all skills without one) in the client's workspace."""
        self._check_running()
        agent_name = request.agent_name
        opened = None
        if request.conversation_id is not None:
            conversation = await self._conversation(request.conversation_id)
            opened = self._open.get(conversation.id)
            agent_name = agent_name or conversation.agent_name
        if request.executor_settings is not None and request.executor_settings.directory:
            resolve_directory(request.executor_settings.directory, await client.workspace_folders())
        definitions = opened.definitions() if opened else await self._definitions(client)
        agent = catalog.find_agent(definitions, agent_name) if agent_name else None
        skills = agent_skills(definitions, agent)
        return api.GetSkillsResult(
            skills=[api.SkillInfo(name=s.name, description=s.description, path=s.path) for s in skills]
        )

    async def set_client_mcp_servers(self, client: Client, request: api.SetClientMcpServersParams) -> api.EmptyResult:
        """The tools an editor serves for a conversation; they replace that client's earlier set."""
        self._check_running()
        opened = await self._opened(request.conversation_id)
        owner = self._clients.get(request.client_id)
        if owner is None:
            raise NotFound(f"no connected client has clientId {request.client_id} @ $.clientId")
        if request.servers:
            opened.client_servers[request.client_id] = (owner, request.servers)
        else:
            opened.client_servers.pop(request.client_id, None)
        return api.EmptyResult()

    async def get_mcp_servers(self, client: Client, request: api.GetMcpServersParams) -> api.GetMcpServersResult:
        """The conversation's MCP servers with their status (asking starts them in the background),
        then the servers editors serve for it. A conversation that is not open runs no server: its
        configured servers are listed as `starting`, which is what opening it does."""
        self._check_running()
        conversation = await self._conversation(request.conversation_id)
        opened = self._open.get(request.conversation_id)
        if opened is not None:
            await opened.start_mcp(opened.definitions(), opened.main_runner().session.agent_name, wait=False)
            configured = opened.mcp.infos()
        else:
            definitions = await self._definitions(client)
            agent = next((a for a in definitions.agents if a.name == conversation.agent_name), None)
            wanted = None if agent is None or agent.mcp_servers is None else set(agent.mcp_servers)
            configured = [
                MCPServerInfo(name=s.name, transport=s.transport, status="starting")
                for s in definitions.mcp_servers
                if wanted is None or s.name in wanted
            ]
        servers = configured + [
            MCPServerInfo(
                name=server.name,
                transport="client",
                status="ready",
                tools=[tool.name for tool in server.tools],
                client_id=client_id,
            )
            for client_id, (_, listed) in (opened.client_servers.items() if opened else ())
            for server in listed
        ]
        return api.GetMcpServersResult(servers=servers)

    def connect(self, client: Client) -> None:
        """Makes the client reachable by its clientId (client tools run through it)."""
        self._clients[client.client_id] = client

    # Session subscriptions

    async def subscribe_session(
        self, client: Client, request: api.SubscribeSessionParams
    ) -> api.SubscribeSessionResult:
        self._check_running()
        opened = await self._opened(request.conversation_id)
        runner = opened.runner(request.session_id)
        if runner is None:
            await self._session(request.conversation_id, request.session_id)  # the right error kind
            raise SessionNotFound(f"session not found: {request.session_id}")
        sub = Subscription(
            subscriptions.SESSION,
            client.client_id,
            capacity=client.max_buffered_events,
            key=(request.conversation_id, request.session_id),
            on_close=lambda s: self._forget(client, s, runner.subscribers),
        )
        # snapshot and registration in one step, with no await in between: nothing lost, nothing twice
        result = api.SubscribeSessionResult(
            subscription_id=sub.id,
            last_saved_ordinal=opened.last_ordinal,
            pending_inputs=copy.deepcopy(runner.pending_infos()),
            streaming_items=copy.deepcopy(runner.streaming_items()),
        )
        self._attach(client, sub, runner.subscribers)
        return result

    async def subscribe_running_conversations(
        self, client: Client, request: api.SubscribeRunningConversationsParams
    ) -> api.SubscribeRunningConversationsResult:
        self._check_running()
        sub = Subscription(
            subscriptions.RUNNING,
            client.client_id,
            capacity=client.max_buffered_events,
            on_close=lambda s: self._forget(client, s, self._running_subs),
        )
        self._attach(client, sub, self._running_subs)
        return api.SubscribeRunningConversationsResult(
            subscription_id=sub.id, initial=api.RunningConversations(conversation_ids=sorted(self._running))
        )

    def session_changed(self, opened: OpenConversation, runner: Any) -> None:
        self._publish_conversation(
            opened.conversation.id, events.SessionUpdated(info=copy.deepcopy(runner.runtime_info()))
        )
        self._update_running()

    def turn_ended(self, opened: OpenConversation, runner: Any) -> None:
        if opened.reconfigured and not opened.running:
            opened.reconfigured = False
            reason = ErrorInfo(kind=ConversationReconfigured.kind, message=ConversationReconfigured.default_message)
            subs = list(self._conversation_subs.get(opened.conversation.id, ()))
            subs += [sub for r in opened.runners.values() for sub in r.subscribers]
            for sub in subs:
                sub.close(reason)

    def _update_running(self) -> None:
        running = frozenset(cid for cid, opened in self._open.items() if opened.running)
        if running != self._running:
            self._running = running
            for sub in list(self._running_subs):
                sub.publish(api.RunningConversations(conversation_ids=sorted(running)))

    # Workspace

    async def get_workspace_directories(
        self, client: Client, request: api.GetWorkspaceDirectoriesParams
    ) -> api.WorkspaceDirectories:
        self._check_running()
        self._check_executor(await self._definitions(client), request.executor_id, "$.executorId")
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
        self, client: Client, request: api.ResolveWorkspaceDirectoryParams
    ) -> api.ResolveWorkspaceDirectoryResult:
        self._check_running()
        self._check_executor(await self._definitions(client), request.executor_id, "$.executorId")
        folders = await client.workspace_folders()
        return api.ResolveWorkspaceDirectoryResult(
            directory=resolve_directory(request.directory, folders, request.base_directory)
        )

    async def open_terminal_workspace(
        self, client: Client, request: api.OpenTerminalWorkspaceParams
    ) -> api.TerminalWorkspace:
        self._check_running()
        executor_id = self._check_executor(await self._definitions(client), request.executor_id, "$.executorId")
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

    async def _opened(self, conversation_id: ConversationId) -> OpenConversation:
        opened = self._open.get(conversation_id)
        if opened is None:
            await self._conversation(conversation_id)
            raise ConversationNotOpen(f"conversation is not open: {conversation_id}")
        return opened

    def _check_content(self, content: list[Content]) -> None:
        if not content:
            raise InvalidParams("must hold at least one part @ $.content")
        for index, part in enumerate(content):
            path = f"$.content[{index}]"
            if part.type == "text":
                if part.text is None:
                    raise InvalidParams(f"required for text content @ {path}.text")
            elif part.type == "image":
                if not part.mime_type or not part.mime_type.startswith("image/"):
                    raise InvalidParams(f"an image MIME type is required @ {path}.mimeType")
                if part.data is None:
                    raise InvalidParams(f"base64 image data is required @ {path}.data")
                try:
                    size = len(base64.b64decode(part.data, validate=True))
                except ValueError:
                    raise InvalidParams(f"not valid base64 @ {path}.data") from None
                if size > self.max_image_bytes:
                    raise InvalidParams(f"image of {size} bytes is larger than {self.max_image_bytes} @ {path}.data")
            else:
                raise InvalidParams(f"expected 'text' or 'image', got {part.type!r} @ {path}.type")

    def _model_or_none(self, definitions: Definitions, session: Session) -> ModelDefinition | None:
        try:
            return resolve_model(definitions, session.model, session.agent_name)
        except NoModelConfigured:
            return None

    @staticmethod
    def _threshold(model: ModelDefinition | None) -> int:
        if model is None:
            return 0
        return model.compact_threshold or model.context_window * 9 // 10

    async def _conversation(self, conversation_id: ConversationId) -> Conversation:
        conversation = await self.storage.get_conversation(conversation_id)
        if conversation is None:
            raise ConversationNotFound(f"conversation not found: {conversation_id}")
        return conversation

    async def _session(self, conversation_id: ConversationId, session_id: str) -> Session:
        await self._conversation(conversation_id)
        session = await self.storage.get_session(session_id)
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
            page = await self.storage.list_sessions(
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
        runner = opened.runner(session.id) if opened else None
        return runner.runtime_info() if runner else SessionRuntimeInfo(session=session)

    async def _save_conversation(self, conversation: Conversation, *, announce: bool = True) -> Conversation:
        conversation.updated_at = utcnow()
        await self.storage.update_conversation(conversation)
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

    def _agent_name(self, definitions: Definitions, requested: str) -> str:
        if not requested:
            return catalog.agents(definitions)[0].name
        return catalog.find_agent(definitions, requested).name

    def _check_model(
        self, definitions: Definitions, selection: ModelSelection | None, path: str
    ) -> ModelSelection | None:
        if selection is None or selection.model is None:
            return selection
        ref = selection.model
        if not any(m.ref == ref for m in definitions.models):
            raise NotFound(f"model not found: {ref.provider}/{ref.name} @ {path}")
        return selection

    def _check_executor(self, definitions: Definitions, executor_id: str | None, path: str) -> str:
        if not executor_id:
            return LOCAL_EXECUTOR
        known = {executor.id for executor in catalog.executor_details(definitions)}
        if executor_id not in known:
            raise NotFound(f"executor not found: {executor_id} @ {path}")
        return executor_id

    async def _resolve_executor_settings(
        self, client: Client, definitions: Definitions, settings: ExecutorSettings | None
    ) -> ExecutorSettings:
        settings = settings or ExecutorSettings()
        executor_id = self._check_executor(definitions, settings.executor_id, "$.executorSettings.executorId")
        folders = await client.workspace_folders()
        return ExecutorSettings(executor_id=executor_id, directory=resolve_directory(settings.directory, folders))

    async def _definitions(self, client: Client) -> Definitions:
        """The definitions for the client's workspace folders."""
        return self.source.for_folders(folder_key(await client.workspace_folders()))

    def _definitions_changed(self, folders: tuple[str, ...]) -> None:
        """Configuration files changed: a conversation mid-turn keeps its definitions until the turn
        ends, then its subscriptions close with `conversationReconfigured`."""
        for opened in self._open.values():
            if opened.folder_key == folders and opened.running:
                opened.reconfigured = True

    def _environment(self, client: Client, entries: list[str] | None) -> dict[str, str]:
        return parse_environment(entries) if entries is not None else dict(client.environment)
