"""Conversations as records: create, open, read, list, archive, title, executor settings, delete.
Opening loads a conversation as it was saved (its sessions, last ordinal and pending inputs)."""

from __future__ import annotations

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import (
    Conversation,
    ConversationListEntry,
    ExecutorSettings,
    Page,
    Session,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import api, events
from openvaala_lsp.protocol.errors import InvalidParams
from openvaala_lsp.runtime import catalog
from openvaala_lsp.runtime.client import Client, environment_of
from openvaala_lsp.runtime.conversation import OpenConversation
from openvaala_lsp.runtime.executor_pool import Executors
from openvaala_lsp.runtime.folders import real_folders
from openvaala_lsp.runtime.model_clients import effective_selection
from openvaala_lsp.runtime.state import RuntimeState
from openvaala_lsp.storage.interfaces import all_sessions

MAX_TITLE_LENGTH = 1000


class Conversations:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def create(self, client: Client, params: api.CreateConversationParams) -> Conversation:
        state = self.state
        definitions = await state.definitions(client)
        agent = catalog.find_agent(definitions, params.agent_name) if params.agent_name else None
        agent_name = (agent or catalog.agents(definitions)[0]).name
        model = catalog.check_model(definitions, params.model, "$.model.model")
        executor_settings = await resolve_executor_settings(
            client, definitions, params.executor_settings, state.executors
        )
        now = utcnow()
        conversation = Conversation(
            id=new_id("conv"),
            agent_name=agent_name,
            created_at=now,
            updated_at=now,
            executor_settings=executor_settings,
            model=model,
            ephemeral=params.ephemeral,
        )
        session = Session(
            id=new_id("sess"),
            conversation_id=conversation.id,
            agent_name=agent_name,
            model=effective_selection(definitions, model, agent_name),
            created_at=now,
        )
        await state.storage.create_conversation(conversation, session)
        environment = environment_of(client, params.environment)
        folders = real_folders(await client.workspace_folders())
        opened = state.open[conversation.id] = OpenConversation(state, conversation, [session], environment, folders)
        opened.runners[session.id].loaded_history = []  # a new session has no history to read back
        if conversation.ephemeral:
            state.watch_ephemeral()
        return conversation

    async def open(self, client: Client, params: api.OpenConversationParams) -> Conversation:
        state = self.state
        # serialised per conversation: two editors opening it at once must share one OpenConversation
        async with state.record_locks[params.conversation_id]:
            conversation = await state.conversation(params.conversation_id)
            opened = state.open.get(conversation.id)
            if opened is None:
                environment = environment_of(client, params.environment)
                state.open[conversation.id] = await self._load(client, conversation, environment)
            elif params.environment is not None:
                opened.environment = environment_of(client, params.environment)
        return conversation

    async def _load(self, client: Client, conversation: Conversation, environment: dict[str, str]) -> OpenConversation:
        storage = self.state.storage
        sessions = await all_sessions(storage, conversation.id)
        folders = real_folders(await client.workspace_folders())
        opened = OpenConversation(self.state, conversation, sessions, environment, folders)
        opened.last_ordinal = await storage.last_ordinal(conversation.id)
        pending = await storage.list_pending_inputs(conversation.id)
        logged = {li.item.id for li in await storage.get_items(conversation.id, [p.item.id for p in pending])}
        for entry in pending:
            runner = opened.runner(entry.item.session_id)
            if entry.item.id in logged:
                # taken into a turn just before a crash: the log has it, the queue must not
                await storage.remove_pending_input(conversation.id, entry.item.id)
            elif runner is not None:
                runner.queue.restore(entry)
        return opened

    async def get(self, client: Client, params: api.GetConversationParams) -> Conversation:
        return await self.state.conversation(params.conversation_id)

    async def is_open(self, client: Client, params: api.IsConversationOpenParams) -> api.IsConversationOpenResult:
        await self.state.conversation(params.conversation_id)
        return api.IsConversationOpenResult(open=params.conversation_id in self.state.open)

    async def list_entries(
        self, client: Client, params: api.ListConversationsParams
    ) -> Page[ConversationListEntry, str]:
        state = self.state
        page = await state.page(
            state.storage.list_conversations(
                cursor=params.cursor,
                limit=params.limit or api.DEFAULT_LIMIT,
                order=params.order,
                archived=params.archived,
                query=params.query or None,
            )
        )
        for entry in page.items:
            opened = state.open.get(entry.conversation.id)
            entry.running = opened is not None and opened.running
        return page

    async def delete(self, client: Client, params: api.DeleteConversationParams) -> api.EmptyResult:
        await self.state.conversation(params.conversation_id)
        await self.state.discard(params.conversation_id, "conversation deleted")
        return api.EmptyResult()

    async def set_archived(self, client: Client, params: api.SetConversationArchivedParams) -> Conversation:
        async with self.state.record_locks[params.conversation_id]:
            conversation = await self.state.conversation(params.conversation_id)
            conversation.archived = params.archived
            return await self.state.save_conversation(conversation)

    async def set_title(self, client: Client, params: api.SetConversationTitleParams) -> api.EmptyResult:
        title = params.title.strip()
        if len(title) > MAX_TITLE_LENGTH:
            raise InvalidParams(f"longer than {MAX_TITLE_LENGTH} characters @ $.title")
        async with self.state.record_locks[params.conversation_id]:
            conversation = await self.state.conversation(params.conversation_id)
            conversation.title = title
            await self.state.save_conversation(conversation, announce=False)
        self.state.live.publish_conversation(conversation.id, events.TitleChanged(title=title))
        return api.EmptyResult()

    async def set_executor_settings(
        self, client: Client, params: api.SetConversationExecutorSettingsParams
    ) -> Conversation:
        definitions = await self.state.definitions(client)
        settings = await resolve_executor_settings(client, definitions, params.executor_settings, self.state.executors)
        async with self.state.record_locks[params.conversation_id]:
            conversation = await self.state.conversation(params.conversation_id)
            conversation.executor_settings = settings
            return await self.state.save_conversation(conversation)


async def resolve_executor_settings(
    client: Client, definitions: Definitions, settings: ExecutorSettings | None, executors: Executors
) -> ExecutorSettings:
    """The executor checked, the directory resolved where it runs (on a remote executor with no
    directory given: none, so its first root, without reaching the host now)."""
    settings = settings or ExecutorSettings()
    executor_id = catalog.check_executor(definitions, settings.executor_id, "$.executorSettings.executorId")
    executor = executors.get(definitions, executor_id)
    if executor.remote and not settings.directory:
        return ExecutorSettings(executor_id=executor_id)
    folders = await client.workspace_folders()
    directory = await executor.resolve_directory(settings.directory, folders)
    return ExecutorSettings(executor_id=executor_id, directory=directory)
