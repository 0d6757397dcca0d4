"""The state the runtime's services share: storage, definitions, model clients, the open
conversations, what runs live, and the runtime's own tasks and lifecycle. It is also the
`ConversationHost` of every open conversation, and holds the lookups every service needs (a
conversation or session by id, with the right error when it is missing)."""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs

from openvaala_lsp.checkpoints.store import CheckpointStore
from openvaala_lsp.definitions import Definitions, ModelDefinition
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.model import (
    AlwaysAllowed,
    Conversation,
    ConversationId,
    ErrorInfo,
    Session,
    SessionRuntimeInfo,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.errors import (
    ConversationNotFound,
    ConversationNotOpen,
    InvalidParams,
    RuntimeStopped,
    SessionNotFound,
)
from openvaala_lsp.providers.base import Provider
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.conversation import OpenConversation
from openvaala_lsp.runtime.definitions_source import DefinitionsSource, FolderKey
from openvaala_lsp.runtime.executor_pool import Executors
from openvaala_lsp.runtime.folders import folder_key
from openvaala_lsp.runtime.live import Live
from openvaala_lsp.runtime.model_clients import ModelClients
from openvaala_lsp.runtime.session import SessionRunner
from openvaala_lsp.runtime.tasks import Tasks
from openvaala_lsp.storage.errors import InvalidCursor
from openvaala_lsp.storage.interfaces import Storage
from openvaala_lsp.storage.split import SplitStorage
from openvaala_lsp.telemetry.base import NOTHING, Telemetry
from openvaala_lsp.tools.base import OpenBuffer
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes
from openvaala_lsp.wire import framing

T = TypeVar("T")
logger = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024
# what an answer's envelope around its items (or a snapshot's entries) may take: the JSON-RPC frame,
# keys and cursors; each item's own allowance is in `model.encoded_size`
ENVELOPE_BYTES = 64 * 1024
UNSAVED_IDLE_TIMEOUT = 30 * 60.0  # seconds an ephemeral conversation lives with no subscriber


class Lifecycle(enum.Enum):
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


@attrs.define(kw_only=True)
class RuntimeOptions:
    max_image_bytes: int = MAX_IMAGE_BYTES
    # the largest message either side sends (OPENVAALA_MAX_MESSAGE_BYTES): pages and snapshots stay under it
    max_message_bytes: int = attrs.Factory(framing.max_message_bytes)
    config_dir: Path | None = None  # where the user's configuration lives (default: paths.config_dir())
    watch_interval: float = 1.0  # seconds between looks at the configuration files
    # seconds an ephemeral conversation lives with no subscriber and no turn (the seed's
    # UnsavedConversationIdleTimeout); OPENVAALA_EPHEMERAL_IDLE_SECONDS sets it for the processes
    unsaved_idle_timeout: float = UNSAVED_IDLE_TIMEOUT
    # where the definitions set with setDefinitions are kept, so a runtime started after one that
    # died (the shared host) has them again; None: kept in memory only
    definitions_file: Path | None = None
    # spans and metrics of turns, model and tool calls, hooks and compactions (`telemetry/`); the
    # runtime closes it when it stops
    telemetry: Telemetry = NOTHING


class RuntimeState:
    def __init__(self, storage: Storage, definitions: Definitions | None, options: RuntimeOptions) -> None:
        self.storage: Storage = SplitStorage(storage)  # ephemeral conversations stay in memory
        self.options = options
        self.source = DefinitionsSource(
            config_dir=options.config_dir, on_change=self._definitions_changed, watch_interval=options.watch_interval
        )
        # an explicit set (setDefinitions, tests) replaces the configuration files
        self.source.explicit = definitions
        self.model_clients = ModelClients()
        self.sandboxes = WarmSandboxes()
        self.executors = Executors()  # the ssh connections, pooled
        self.checkpoints = CheckpointStore()  # git is looked for at the first turn that changes files
        self.telemetry = options.telemetry
        self.open: dict[ConversationId, OpenConversation] = {}
        self.live = Live(self.open)
        self.tasks = Tasks()
        self.lifecycle = Lifecycle.RUNNING
        self.turn_listeners: list[Callable[[ConversationId], None]] = []  # services told when a turn ends
        # read-modify-write of one conversation's record is serialised so no update is lost
        self.record_locks: dict[ConversationId, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._reaper: asyncio.Task[None] | None = None

    def answer_bytes(self) -> int:
        """What the items of one answer (a page, a snapshot) may take, so that it stays one message."""
        return self.options.max_message_bytes - ENVELOPE_BYTES

    def ensure_running(self) -> None:
        if self.lifecycle is not Lifecycle.RUNNING:
            raise RuntimeStopped()

    # Lookups, each with the error kind a client expects

    async def conversation(self, conversation_id: ConversationId) -> Conversation:
        conversation = await self.storage.get_conversation(conversation_id)
        if conversation is None:
            raise ConversationNotFound(f"conversation not found: {conversation_id}")
        return conversation

    async def session(self, conversation_id: ConversationId, session_id: str) -> Session:
        await self.conversation(conversation_id)
        session = await self.storage.get_session(session_id)
        if session is None or session.conversation_id != conversation_id:
            raise SessionNotFound(f"session not found in conversation {conversation_id}: {session_id}")
        return session

    async def check_scope(self, conversation_id: ConversationId, session_id: str | None) -> None:
        if session_id is None:
            await self.conversation(conversation_id)
        else:
            await self.session(conversation_id, session_id)

    async def opened(self, conversation_id: ConversationId) -> OpenConversation:
        opened = self.open.get(conversation_id)
        if opened is None:
            await self.conversation(conversation_id)
            raise ConversationNotOpen(f"conversation is not open: {conversation_id}")
        return opened

    def runner(self, session: Session) -> SessionRunner | None:
        opened = self.open.get(session.conversation_id)
        return opened.runner(session.id) if opened else None

    def runtime_info(self, session: Session) -> SessionRuntimeInfo:
        runner = self.runner(session)
        return runner.runtime_info() if runner else SessionRuntimeInfo(session=session)

    async def definitions(self, client: Client) -> Definitions:
        """The definitions for the client's workspace folders."""
        return self.source.for_folders(folder_key(await client.workspace_folders()))

    async def definitions_of(self, client: Client, conversation_id: ConversationId) -> Definitions:
        """An open conversation's definitions, else the client's."""
        opened = self.open.get(conversation_id)
        return opened.definitions() if opened else await self.definitions(client)

    @staticmethod
    async def page(call: Awaitable[T]) -> T:
        try:
            return await call
        except InvalidCursor as exc:
            raise InvalidParams(f"{exc} @ $.cursor") from None

    async def save_conversation(self, conversation: Conversation, *, announce: bool = True) -> Conversation:
        """Saves a changed record (under its record lock) for everyone: the open conversation takes it,
        and conversation subscribers hear `conversationUpdated` unless told otherwise."""
        conversation.updated_at = utcnow()
        await self.storage.update_conversation(conversation)
        opened = self.open.get(conversation.id)
        if opened is not None:
            opened.record = conversation
        if announce:
            self.live.publish_conversation(conversation.id, events.ConversationUpdated(conversation=conversation))
        return conversation

    # What open conversations need (hosts.ConversationHost)

    async def remember_allowed(self, conversation_id: ConversationId, rule: AlwaysAllowed) -> None:
        async with self.record_locks[conversation_id]:
            conversation = await self.conversation(conversation_id)
            if rule not in conversation.always_allowed:
                conversation.always_allowed.append(rule)
                await self.save_conversation(conversation)

    def definitions_for(self, folders: FolderKey) -> Definitions:
        return self.source.for_folders(folders)

    def open_buffer(self, real: str) -> OpenBuffer | None:
        for client in list(self.live.clients.values()):
            if client.open_buffer is not None and (buffer := client.open_buffer(real)) is not None:
                return buffer
        return None

    def hooks_for(self, definitions: Definitions) -> HookRunner:
        return self.source.hooks(definitions)

    async def provider(self, model: ModelDefinition, environment: Mapping[str, str]) -> Provider:
        return await self.model_clients.get(model, environment)

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        return self.tasks.spawn(coro, name=name)

    def session_changed(self, conversation_id: ConversationId, info: SessionRuntimeInfo) -> None:
        self.live.session_changed(conversation_id, info)

    def session_added(self, session: Session) -> None:
        self.live.session_added(session)

    def turn_ended(self, conversation_id: ConversationId) -> None:
        self.live.turn_ended(conversation_id)
        for listener in list(self.turn_listeners):
            listener(conversation_id)

    def mark_reconfigured(self, conversation_ids: Iterable[ConversationId]) -> None:
        """Conversations mid-turn keep their definitions until the turn ends, then their
        subscriptions close with `conversationReconfigured`."""
        for conversation_id in conversation_ids:
            self.open[conversation_id].reconfigured = True

    # Ending conversations

    async def discard(self, conversation_id: ConversationId, why: str) -> None:
        """Stops the conversation, closes its subscriptions (kind conversationNotFound, `why`) and
        removes it with everything it holds."""
        async with self.record_locks[conversation_id]:
            opened = self.open.pop(conversation_id, None)
            if opened is not None:
                await opened.stop()
            reason = ErrorInfo(kind=ConversationNotFound.kind, message=why)
            self.live.close_conversation(conversation_id, reason, opened)
            self.live.update_running()
            await self.storage.delete_conversation(conversation_id)
            try:
                await asyncio.to_thread(self.checkpoints.forget, conversation_id)
            except Exception:  # its snapshots stay behind: no reason to fail the deletion
                logger.exception("the checkpoints of conversation %s could not be deleted", conversation_id)
        self.record_locks.pop(conversation_id, None)

    def watch_ephemeral(self) -> None:
        """Starts (once) the task that deletes ephemeral conversations left unwatched and idle."""
        if self._reaper is None or self._reaper.done():
            self._reaper = self.spawn(self._reap(), name="ephemeral conversations")

    async def _reap(self) -> None:
        timeout = self.options.unsaved_idle_timeout
        idle_since: dict[ConversationId, float] = {}
        loop = asyncio.get_running_loop()
        while any(opened.record.ephemeral for opened in self.open.values()):
            await asyncio.sleep(min(max(timeout / 4, 0.01), 30.0))
            now = loop.time()
            for opened in [o for o in self.open.values() if o.record.ephemeral]:
                if opened.busy or self.live.watched(opened):
                    idle_since.pop(opened.id, None)
                elif now - idle_since.setdefault(opened.id, now) >= timeout:
                    idle_since.pop(opened.id, None)
                    await self.discard(opened.id, "ephemeral conversation left idle")

    def _definitions_changed(self, folders: FolderKey) -> None:
        self.mark_reconfigured(
            cid for cid, opened in self.open.items() if opened.folder_key == folders and opened.running
        )
