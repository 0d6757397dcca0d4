"""What configures conversations: the definitions (set, listed), a session's model, the skills an
agent sees, and MCP servers (configured, and those editors serve)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.executors import ssh_target
from openvaala_lsp.hooks.validation import validate_hooks
from openvaala_lsp.mcp.model import MCPServerInfo
from openvaala_lsp.model import Session
from openvaala_lsp.paths import write_private
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import ParamsError, structure, unstructure
from openvaala_lsp.protocol.errors import InvalidParams, NotFound
from openvaala_lsp.runtime import catalog
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.model_clients import effective_selection
from openvaala_lsp.runtime.skills import agent_skills
from openvaala_lsp.runtime.state import RuntimeOptions, RuntimeState

logger = logging.getLogger(__name__)


class Configuration:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def set_definitions(self, client: Client, params: Definitions) -> api.SetDefinitionsResult:
        """Replaces every definition. Busy conversations finish their turn with the old ones, then
        their subscriptions close with `conversationReconfigured`."""
        problems = validate_hooks(params.hooks) + ssh_target.executor_problems(params.executors)
        if problems:
            raise InvalidParams("; ".join(problems))
        busy = [cid for cid, opened in self.state.open.items() if opened.running]
        self.state.source.explicit = params
        self.state.mark_reconfigured(busy)
        if (kept := self.state.options.definitions_file) is not None:
            await asyncio.to_thread(_keep, kept, params)
        return api.SetDefinitionsResult(busy_conversation_ids=busy)

    async def list_agents(self, client: Client, params: api.ListAgentsParams) -> api.ListAgentsResult:
        return api.ListAgentsResult(agents=catalog.agent_infos(await self.state.definitions(client)))

    async def list_models(self, client: Client, params: api.ListModelsParams) -> api.ModelList:
        return catalog.model_list(await self.state.definitions(client), params.agent_name)

    async def list_executors(self, client: Client, params: api.ListExecutorsParams) -> api.ListExecutorsResult:
        definitions = await self.state.definitions(client)
        return api.ListExecutorsResult(executors=await self.state.executors.details(definitions))

    async def get_hooks(self, client: Client, params: api.GetHooksParams) -> api.GetHooksResult:
        return api.GetHooksResult(hooks=catalog.hook_infos(await self.state.definitions(client)))

    async def set_session_model(self, client: Client, params: api.SetSessionModelParams) -> Session:
        state = self.state
        session = await state.session(params.conversation_id, params.session_id)
        definitions = await state.definitions_of(client, params.conversation_id)
        selection = catalog.check_model(definitions, params.model, "$.model.model")
        session.model = effective_selection(definitions, selection, session.agent_name)
        await state.storage.update_session(session)
        opened = state.open.get(params.conversation_id)
        runner = opened.runner(session.id) if opened else None
        if runner is not None:
            runner.session = session  # takes effect at the next turn
            state.live.session_changed(session.conversation_id, runner.runtime_info())
        return session

    async def get_skills(self, client: Client, params: api.GetSkillsParams) -> api.GetSkillsResult:
        """The skills an agent sees: of the conversation's agent and workspace when a conversation is
        given, else of `agentName` (all skills without one) in the client's workspace."""
        state = self.state
        agent_name = params.agent_name
        definitions: Definitions | None = None
        if params.conversation_id is not None:
            conversation = await state.conversation(params.conversation_id)
            agent_name = agent_name or conversation.agent_name
            definitions = await state.definitions_of(client, conversation.id)
        definitions = definitions or await state.definitions(client)
        settings = params.executor_settings
        if settings is not None and settings.directory:  # checked where that executor runs
            executor_id = catalog.check_executor(definitions, settings.executor_id, "$.executorSettings.executorId")
            executor = state.executors.get(definitions, executor_id)
            await executor.resolve_directory(settings.directory, await client.workspace_folders())
        agent = catalog.find_agent(definitions, agent_name) if agent_name else None
        skills = agent_skills(definitions, agent)
        return api.GetSkillsResult(
            skills=[api.SkillInfo(name=s.name, description=s.description, path=s.path) for s in skills]
        )

    async def set_client_mcp_servers(self, client: Client, params: api.SetClientMcpServersParams) -> api.EmptyResult:
        """The tools an editor serves for a conversation; they replace that client's earlier set."""
        opened = await self.state.opened(params.conversation_id)
        owner = self.state.live.clients.get(params.client_id)
        if owner is None:
            raise NotFound(f"no connected client has clientId {params.client_id} @ $.clientId")
        if params.servers:
            opened.client_servers[params.client_id] = (owner, params.servers)
        else:
            opened.client_servers.pop(params.client_id, None)
        return api.EmptyResult()

    async def get_mcp_servers(self, client: Client, params: api.GetMcpServersParams) -> api.GetMcpServersResult:
        """The conversation's MCP servers with their status (asking starts them in the background),
        then the servers editors serve for it. A conversation that is not open runs no server: its
        configured servers are listed as `starting`, which is what opening it does."""
        state = self.state
        conversation = await state.conversation(params.conversation_id)
        opened = state.open.get(params.conversation_id)
        if opened is not None:
            await opened.start_mcp(opened.definitions(), opened.main_runner().session.agent_name, wait=False)
            configured = opened.mcp.infos()
        else:
            definitions = await state.definitions(client)
            agent = catalog.configured_agent(definitions, conversation.agent_name)
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


def _keep(path: Path, definitions: Definitions) -> None:
    write_private(path, json.dumps(unstructure(definitions)))  # names models, hooks and their commands


async def kept_definitions(options: RuntimeOptions) -> Definitions | None:
    """The definitions an earlier runtime of this host was given, if any (unreadable ones are logged
    and dropped: the configuration files apply then)."""
    path = options.definitions_file
    if path is None:
        return None
    try:
        text = await asyncio.to_thread(path.read_text)
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("cannot read the kept definitions %s: %s", path, exc)
        return None
    try:
        return structure(json.loads(text), Definitions)
    except (ValueError, ParamsError) as exc:
        logger.warning("ignoring the kept definitions %s: %s", path, exc)
        return None
