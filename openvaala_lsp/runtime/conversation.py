"""A conversation the runtime holds open: its session runners, where its tools run, and with which
environment."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from openvaala_lsp.definitions import Definitions, ModelDefinition
from openvaala_lsp.mcp import MCPManager
from openvaala_lsp.mcp.model import ClientMCPServer
from openvaala_lsp.model import Conversation, Item, ModelCall, Order, Session, WorkspaceFolder
from openvaala_lsp.protocol import api
from openvaala_lsp.providers.base import Provider
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.client_tools import ClientToolAdapter
from openvaala_lsp.runtime.sessions import SessionRunner
from openvaala_lsp.runtime.skills import SkillTool, agent_skills
from openvaala_lsp.runtime.workspace import containing_folder
from openvaala_lsp.storage.interfaces import Storage
from openvaala_lsp.tools.base import Tool, ToolContext
from openvaala_lsp.tools.registry import local_tools

MCP_FIRST_USE_WAIT = 10.0  # seconds a conversation's first turn waits for its MCP servers

if TYPE_CHECKING:
    from openvaala_lsp.runtime.core import Runtime


async def session_items(storage: Storage, conversation_id: str, session_id: str) -> list[Item]:
    """Every saved item of a session, in order."""
    items: list[Item] = []
    cursor: int | None = None
    while True:
        page = await storage.list_items(
            conversation_id, session_id=session_id, cursor=cursor, limit=api.MAX_LIMIT, order=Order.ASC
        )
        items.extend(logged.item for logged in page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor


class OpenConversation:
    def __init__(
        self,
        runtime: Runtime,
        conversation: Conversation,
        sessions: list[Session],
        environment: dict[str, str],
        folders: list[WorkspaceFolder],
    ) -> None:
        self.runtime = runtime
        self.storage = runtime.storage
        self.conversation = conversation
        self.environment = environment
        self.folders = folders
        self.runners = {session.id: SessionRunner(self, session) for session in sessions}
        self.last_ordinal = 0
        self.closed = False
        self.client_servers: dict[str, tuple[Client, list[ClientMCPServer]]] = {}  # by client id
        self.mcp = MCPManager()
        self._mcp_started = False
        self.reconfigured = False  # definitions changed while busy: subscriptions close when idle

    @property
    def busy(self) -> bool:
        return any(runner.busy for runner in self.runners.values())

    @property
    def running(self) -> bool:
        return any(runner.active is not None for runner in self.runners.values())

    def runner(self, session_id: str) -> SessionRunner | None:
        return self.runners.get(session_id)

    def main_runner(self) -> SessionRunner:
        return min(self.runners.values(), key=lambda r: (r.session.created_at, r.session.id))

    # What the session runners need

    @property
    def folder_key(self) -> tuple[str, ...]:
        return tuple(folder.path for folder in self.folders)  # real paths already

    def definitions(self) -> Definitions:
        return self.runtime.source.for_folders(self.folder_key)

    def directory(self) -> str:
        return self.conversation.executor_settings.directory or (self.folders[0].path if self.folders else "/")

    def workspace_root(self) -> str:
        holder = containing_folder(self.directory(), self.folders)
        return holder.path if holder else self.directory()

    def tool_context(self) -> ToolContext:
        roots = [folder.path for folder in self.folders] or [self.directory()]
        return ToolContext(directory=self.directory(), roots=roots, environment=self.environment)

    def tools(self, definitions: Definitions, agent_name: str) -> list[Tool]:
        """The agent's local tools (its `tools` list filters them), its skills, the tools of its MCP
        servers that are ready, and the tools editors serve for this conversation."""
        agent = next((a for a in definitions.agents if a.name == agent_name), None)
        tools: list[Tool] = local_tools()
        if agent is not None and agent.tools is not None:
            allowed = set(agent.tools)
            tools = [tool for tool in tools if tool.name in allowed]
        skills = agent_skills(definitions, agent)
        if skills:
            tools.append(SkillTool(skills))
        tools += self.mcp.tools()
        for client, servers in self.client_servers.values():
            tools += [ClientToolAdapter(client, self.conversation.id, s, t) for s in servers for t in s.tools]
        return tools

    async def start_mcp(self, definitions: Definitions, agent_name: str, *, wait: bool) -> None:
        """Adopts the agent's MCP servers and starts them in the background. Only a conversation's
        first turn waits for them, and briefly: a slow server joins a later model call."""
        agent = next((a for a in definitions.agents if a.name == agent_name), None)
        servers = definitions.mcp_servers
        if agent is not None and agent.mcp_servers is not None:
            servers = [s for s in servers if s.name in set(agent.mcp_servers)]
        self.mcp.configure(servers, environment=self.environment, cwd=self.directory())
        first = not self._mcp_started
        self._mcp_started = True
        await self.mcp.ensure_started(MCP_FIRST_USE_WAIT if first and wait else 0.0)

    async def provider(self, model: ModelDefinition) -> Provider:
        return await self.runtime.providers.get(model, self.environment)

    async def record_call(self, call: ModelCall) -> None:
        await self.storage.append_model_call(call)

    async def load_history(self, session_id: str) -> list[Item]:
        return await session_items(self.storage, self.conversation.id, session_id)

    def session_changed(self, runner: SessionRunner) -> None:
        self.runtime.session_changed(self, runner)

    def turn_ended(self, runner: SessionRunner) -> None:
        self.runtime.turn_ended(self, runner)

    async def stop(self) -> None:
        self.closed = True
        await asyncio.gather(*(runner.stop() for runner in self.runners.values()))
        await self.mcp.close()
