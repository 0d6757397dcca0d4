"""The narrow interfaces between the runtime's layers, so that no object reaches back to its owner:
what an open conversation needs from the runtime holding it (`ConversationHost`), and what a
session needs from its conversation (`SessionHost`)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, Protocol, TypeVar

from openvaala_lsp.checkpoints.store import CheckpointStore
from openvaala_lsp.definitions import AgentDefinition, Definitions, ModelDefinition
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.model import AlwaysAllowed, Session, SessionRuntimeInfo
from openvaala_lsp.providers.base import Provider
from openvaala_lsp.runtime.definitions_source import FolderKey
from openvaala_lsp.runtime.executor_pool import Executors
from openvaala_lsp.storage.interfaces import Storage
from openvaala_lsp.telemetry.base import Telemetry
from openvaala_lsp.tools.base import OpenBuffer, Sandboxes, Tool, ToolContext

T = TypeVar("T")


class ConversationHost(Protocol):
    """What an open conversation needs from the runtime."""

    @property
    def storage(self) -> Storage: ...

    @property
    def sandboxes(self) -> Sandboxes:
        """Where sandboxed commands start."""

    @property
    def executors(self) -> Executors:
        """Where tools run: the local machine, or a pooled ssh connection."""

    @property
    def checkpoints(self) -> CheckpointStore:
        """The workspace folders' shadow repositories."""

    @property
    def telemetry(self) -> Telemetry: ...

    def definitions_for(self, folders: FolderKey) -> Definitions: ...

    def open_buffer(self, real: str) -> OpenBuffer | None:
        """A file as an editor connected now holds it open (its unsaved text)."""

    def hooks_for(self, definitions: Definitions) -> HookRunner: ...

    async def provider(self, model: ModelDefinition, environment: Mapping[str, str]) -> Provider: ...

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]: ...

    def session_changed(self, conversation_id: str, info: SessionRuntimeInfo) -> None:
        """A session's state, queue or usage changed: conversation subscribers hear of it."""

    def turn_ended(self, conversation_id: str) -> None: ...

    def session_added(self, session: Session) -> None: ...

    async def remember_allowed(self, conversation_id: str, rule: AlwaysAllowed) -> None:
        """`allowAlways`: saved with the conversation, for the rest of it."""


class SessionHost(Protocol):
    """What a session needs from its conversation."""

    @property
    def storage(self) -> Storage: ...

    @property
    def closed(self) -> bool: ...

    @property
    def telemetry(self) -> Telemetry: ...

    @property
    def environment(self) -> dict[str, str]: ...

    def definitions(self) -> Definitions: ...

    def hooks(self, definitions: Definitions) -> HookRunner: ...

    def directory(self) -> str: ...

    def workspace_root(self) -> str: ...

    def tool_context(self, definitions: Definitions, agent: AgentDefinition | None) -> ToolContext:
        """Where the agent's tools run, with what environment, and what they may not touch."""

    def always_allowed(self) -> list[AlwaysAllowed]:
        """What the user allowed for the rest of the conversation."""

    async def remember_allowed(self, rule: AlwaysAllowed) -> None: ...

    def ancestors_can_answer(self, session: Session) -> bool:
        """Whether a subscriber of a session above this sub-agent's can answer approvals."""

    def publish_to_ancestors(self, session: Session, event: Any) -> None:
        """To the subscribers of the sessions above this sub-agent's."""

    def tools(self, definitions: Definitions, session: Session) -> list[Tool]: ...

    async def start_mcp(self, definitions: Definitions, agent_name: str, *, wait: bool) -> None: ...

    async def provider(self, model: ModelDefinition) -> Provider: ...

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]: ...

    def saved(self, ordinal: int) -> None:
        """An item was saved under `ordinal` (the conversation's last saved ordinal moves on)."""

    def session_changed(self, info: SessionRuntimeInfo) -> None: ...

    def turn_ended(self) -> None: ...
