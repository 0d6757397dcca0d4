"""A conversation the runtime holds open: its session runners, where its tools run, and with which
environment. It is each runner's `SessionHost`, and reaches the runtime only through its
`ConversationHost`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine
from typing import Any, TypeVar

from openvaala_lsp.definitions import AgentDefinition, Definitions, ModelDefinition, Sandbox
from openvaala_lsp.executors.base import Executor
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.mcp.manager import MCPManager
from openvaala_lsp.mcp.model import ClientMCPServer
from openvaala_lsp.model import AlwaysAllowed, Conversation, Session, SessionRuntimeInfo, WorkspaceFolder
from openvaala_lsp.protocol.api import PendingApproval
from openvaala_lsp.providers.base import Provider
from openvaala_lsp.runtime import catalog, subagents
from openvaala_lsp.runtime.checkpointing import TurnCheckpoints, checkpointed
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.client_tools import ClientToolAdapter
from openvaala_lsp.runtime.executor_pool import is_local
from openvaala_lsp.runtime.folders import containing_folder
from openvaala_lsp.runtime.hosts import ConversationHost
from openvaala_lsp.runtime.session import SessionRunner
from openvaala_lsp.runtime.skills import SkillTool, agent_skills
from openvaala_lsp.storage.interfaces import Storage
from openvaala_lsp.telemetry.base import Telemetry
from openvaala_lsp.tools.base import EditorFiles, Tool, ToolContext
from openvaala_lsp.tools.environment import tool_environment
from openvaala_lsp.tools.protected import protected_paths

MCP_FIRST_USE_WAIT = 10.0  # seconds a conversation's first turn waits for its MCP servers

T = TypeVar("T")


class OpenConversation:
    def __init__(
        self,
        host: ConversationHost,
        conversation: Conversation,
        sessions: list[Session],
        environment: dict[str, str],
        folders: list[WorkspaceFolder],
    ) -> None:
        self._host = host
        self.record = conversation
        self.environment = environment
        self.folders = folders
        self.runners = {session.id: SessionRunner(self, session) for session in sessions}
        self.last_ordinal = 0
        self.closed = False
        self.client_servers: dict[str, tuple[Client, list[ClientMCPServer]]] = {}  # by client id
        # the client that sent the latest input, when it reads and writes files for the file tools
        self.file_client: Client | None = None
        self.mcp = MCPManager()
        self._mcp_started = False
        self.reconfigured = False  # definitions changed while busy: subscriptions close when idle
        self.turn_checkpoints: dict[str, TurnCheckpoints] = {}  # of the running turns, by turn id

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def telemetry(self) -> Telemetry:
        return self._host.telemetry

    @property
    def storage(self) -> Storage:
        return self._host.storage

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

    def subscriptions(self) -> list[Any]:
        """The subscriptions of its sessions (conversation subscriptions are the runtime's)."""
        return [sub for runner in self.runners.values() for sub in runner.subscribers]

    # What the session runners need (hosts.SessionHost)

    @property
    def folder_key(self) -> tuple[str, ...]:
        return tuple(folder.path for folder in self.folders)  # real paths already

    def definitions(self) -> Definitions:
        return self._host.definitions_for(self.folder_key)

    def hooks(self, definitions: Definitions) -> HookRunner:
        return self._host.hooks_for(definitions)

    def executor(self, definitions: Definitions) -> Executor:
        return self._host.executors.get(definitions, self.record.executor_settings.executor_id)

    def directory(self) -> str:
        """The local directory (of hooks, MCP servers, instructions): a remote executor's is not one."""
        settings = self.record.executor_settings
        if settings.directory and (is_local(settings.executor_id) or not self._remote(settings.executor_id or "")):
            return settings.directory
        return self.folders[0].path if self.folders else "/"

    def _remote(self, executor_id: str) -> bool:
        definition = next((e for e in self.definitions().executors if e.id == executor_id), None)
        return definition is None or definition.kind != "local"

    def workspace_root(self) -> str:
        holder = containing_folder(self.directory(), self.folders)
        return holder.path if holder else self.directory()

    def tool_context(self, definitions: Definitions, agent: AgentDefinition | None) -> ToolContext:
        executor = self.executor(definitions)
        directory = self.directory()
        if executor.remote:  # its roots, and its directory or else its first root
            directory = self.record.executor_settings.directory or executor.roots(self.folders)[0].path
        roots = [root.path for root in executor.roots(self.folders)] or [directory]
        sandbox = agent.sandbox if agent is not None and agent.sandbox is not None else Sandbox()
        return ToolContext(
            directory=directory,
            roots=roots,
            environment=self.tool_environment(definitions, sandbox),
            warm=self._host.sandboxes,
            protected=protected_paths(roots, sandbox.deny_read or ()),
            buffers=self._host.open_buffer,
            editor_files=None if executor.remote else self.editor_files(),
            remote=executor.remote,
        )

    def editor_files(self) -> EditorFiles | None:
        """The file tools' way through the editor that sent the latest input, if it offers one."""
        client = self.file_client
        if client is None or (client.read_text is None and client.write_text is None):
            return None
        return EditorFiles(
            editor=client.name or client.client_id,
            read=functools.partial(client.read_text, self.id) if client.read_text is not None else None,
            write=functools.partial(client.write_text, self.id) if client.write_text is not None else None,
        )

    def tool_environment(self, definitions: Definitions, sandbox: Sandbox | None = None) -> dict[str, str]:
        """The conversation's environment as its tools' processes get it: no secrets, never a model's key."""
        return tool_environment(
            self.environment,
            allow=(sandbox.allow_env or ()) if sandbox is not None else (),
            model_keys=[model.api_key_env for model in definitions.models if model.api_key_env],
        )

    def _ancestors(self, session: Session) -> list[SessionRunner]:
        found: list[SessionRunner] = []
        parent = session.parent_session_id
        while parent is not None and (runner := self.runners.get(parent)) is not None and runner not in found:
            found.append(runner)
            parent = runner.session.parent_session_id
        return found

    def ancestors_can_answer(self, session: Session) -> bool:
        return any(runner.can_answer() for runner in self._ancestors(session))

    def publish_to_ancestors(self, session: Session, event: Any) -> None:
        for runner in self._ancestors(session):
            runner.publish(event)

    def pending_approvals(self, session: Session) -> list[PendingApproval]:
        """What waits in this session and in the sessions of its sub-agents (at any depth)."""
        below = [
            runner
            for runner in self.runners.values()
            if runner.session is session or any(a.session is session for a in self._ancestors(runner.session))
        ]
        return [pending for runner in below for pending in runner.approvals.waiting()]

    def subscribers_changed(self) -> None:
        """A subscription ended: approvals nobody can answer any more are refused."""
        for runner in list(self.runners.values()):
            runner.approvals.subscribers_changed()

    def always_allowed(self) -> list[AlwaysAllowed]:
        return self.record.always_allowed

    async def remember_allowed(self, rule: AlwaysAllowed) -> None:
        await self._host.remember_allowed(self.id, rule)

    def tools(self, definitions: Definitions, session: Session) -> list[Tool]:
        """The agent's local tools (its `tools` list filters them), its skills, its sub-agents, the
        tools of its MCP servers that are ready, and the tools editors serve for this conversation."""
        agent = catalog.configured_agent(definitions, session.agent_name)
        executor = self.executor(definitions)
        tools: list[Tool] = executor.tools()
        if agent is not None and agent.tools is not None:
            allowed = set(agent.tools)
            tools = [tool for tool in tools if tool.name in allowed]
        skills = agent_skills(definitions, agent)
        if skills:
            tools.append(SkillTool(skills))
        parent = self.runners.get(session.id)
        known = (
            [name for name in (agent.sub_agents or []) if catalog.configured_agent(definitions, name)] if agent else []
        )
        if known and parent is not None and len(self._ancestors(session)) < subagents.MAX_DEPTH:
            tools.append(subagents.SubAgentTool(self, parent, definitions, known))
        tools += self.mcp.tools()
        for client, servers in self.client_servers.values():
            tools += [ClientToolAdapter(client, self.id, s, t) for s in servers for t in s.tools]
        # a remote executor's files are not the local folders the checkpoints snapshot
        return checkpointed(tools, None if executor.remote else self._checkpoints_of(parent))

    def _checkpoints_of(self, runner: SessionRunner | None) -> TurnCheckpoints | None:
        """The checkpoints of the runner's running turn, made at its first model call (None: git is
        missing, or no turn runs)."""
        active = runner.active if runner is not None else None
        if active is None or not self._host.checkpoints.usable:
            return None
        found = self.turn_checkpoints.get(active.turn.id)
        if found is None:
            folders = [folder.path for folder in self.folders] or [self.directory()]
            found = TurnCheckpoints(self._host.checkpoints, self.id, active.turn.id, folders, active.items.publish)
            self.turn_checkpoints[active.turn.id] = found
        return found

    async def start_mcp(self, definitions: Definitions, agent_name: str, *, wait: bool) -> None:
        """Adopts the agent's MCP servers and starts them in the background. Only a conversation's
        first turn waits for them, and briefly: a slow server joins a later model call."""
        agent = catalog.configured_agent(definitions, agent_name)
        servers = definitions.mcp_servers
        if agent is not None and agent.mcp_servers is not None:
            servers = [s for s in servers if s.name in set(agent.mcp_servers)]
        # a server's own `env` is the user's to give; what it inherits passes the secret filter
        environment = self.tool_environment(definitions, agent.sandbox if agent is not None else None)
        self.mcp.configure(servers, environment=environment, cwd=self.directory())
        first = not self._mcp_started
        self._mcp_started = True
        await self.mcp.ensure_started(MCP_FIRST_USE_WAIT if first and wait else 0.0)

    async def provider(self, model: ModelDefinition) -> Provider:
        return await self._host.provider(model, self.environment)

    async def add_session(self, session: Session) -> SessionRunner:
        """A new session of the conversation (a sub-agent's), saved, running, announced."""
        await self.storage.create_session(session)
        runner = SessionRunner(self, session)
        runner.loaded_history = []  # a new session has no history to read back
        self.runners[session.id] = runner
        self._host.session_added(session)
        return runner

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        return self._host.spawn(coro, name=name)

    def saved(self, ordinal: int) -> None:
        self.last_ordinal = max(self.last_ordinal, ordinal)

    def session_changed(self, info: SessionRuntimeInfo) -> None:
        self._host.session_changed(self.id, info)

    def turn_ended(self) -> None:
        running = {runner.active.turn.id for runner in self.runners.values() if runner.active is not None}
        for turn_id in [turn_id for turn_id in self.turn_checkpoints if turn_id not in running]:
            self.spawn(self.turn_checkpoints.pop(turn_id).finish(), name=f"checkpoint after turn {turn_id}")
        self._host.turn_ended(self.id)

    async def stop(self) -> None:
        self.closed = True
        await asyncio.gather(*(runner.stop() for runner in self.runners.values()))
        await self.mcp.close()
