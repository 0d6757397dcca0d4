"""What is configured: agents, models, executors, hooks, MCP servers, skills."""

from __future__ import annotations

import attrs

from openvaala_lsp.definitions import ModelDefinition, Permissions, Sandbox
from openvaala_lsp.mcp.model import ClientMCPServer, MCPServerInfo
from openvaala_lsp.model import (
    ConversationId,
    ExecutorSettings,
    ModelRef,
)


@attrs.define(kw_only=True)
class AgentInfo:
    name: str
    description: str = ""
    default_model: ModelRef | None = None
    permissions: Permissions | None = None  # as defined; absent: the runtime's defaults
    sandbox: Sandbox | None = None  # as defined; absent: workspace-write without network


@attrs.define(kw_only=True)
class ListAgentsResult:
    agents: list[AgentInfo]


@attrs.define(kw_only=True)
class ListModelsParams:
    agent_name: str | None = None


@attrs.define(kw_only=True)
class ModelList:
    models: list[ModelDefinition]
    agent_default_model: ModelRef | None = None


@attrs.define(kw_only=True)
class ExecutorDetails:
    id: str
    kind: str
    description: str = ""
    reachable: bool | None = None  # whether its host answered when listed (`local`: always)
    error: str | None = None  # why it is not reachable


@attrs.define(kw_only=True)
class ListExecutorsResult:
    executors: list[ExecutorDetails]


@attrs.define(kw_only=True)
class HookInfo:
    name: str
    event: str
    command: str
    matcher: str | None = None
    timeout_ms: int | None = None


@attrs.define(kw_only=True)
class GetHooksResult:
    hooks: list[HookInfo]


@attrs.define(kw_only=True)
class GetMcpServersResult:
    servers: list[MCPServerInfo]


@attrs.define(kw_only=True)
class SetClientMcpServersParams:
    conversation_id: ConversationId
    client_id: str
    servers: list[ClientMCPServer]


@attrs.define(kw_only=True)
class GetSkillsParams:
    agent_name: str | None = None
    conversation_id: ConversationId | None = None
    executor_settings: ExecutorSettings | None = None


@attrs.define(kw_only=True)
class SkillInfo:
    name: str
    description: str
    path: str | None = None


@attrs.define(kw_only=True)
class GetSkillsResult:
    skills: list[SkillInfo]


@attrs.define(kw_only=True)
class SetDefinitionsResult:
    busy_conversation_ids: list[ConversationId]
