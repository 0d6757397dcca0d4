"""Read-only views of the definitions: agents, models, executors, hooks."""

from __future__ import annotations

from openvaala_lsp.definitions import AgentDefinition, Definitions, ModelDefinition
from openvaala_lsp.model import ModelSelection
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import NotFound

DEFAULT_AGENT = "default"
LOCAL_EXECUTOR = "local"
LOCAL_EXECUTOR_DESCRIPTION = "runs tools as local processes in the conversation's workspace directory"


def agents(definitions: Definitions) -> list[AgentDefinition]:
    """The configured agents, or the built-in default agent when none is configured."""
    return definitions.agents or [AgentDefinition(name=DEFAULT_AGENT, description="the built-in coding agent")]


def configured_agent(definitions: Definitions, name: str) -> AgentDefinition | None:
    """The configured agent of that name, if any (the built-in default has no definition to read)."""
    return next((agent for agent in definitions.agents if agent.name == name), None)


def find_agent(definitions: Definitions, name: str) -> AgentDefinition:
    for agent in agents(definitions):
        if agent.name == name:
            return agent
    raise NotFound(f"agent not found: {name}")


def agent_infos(definitions: Definitions) -> list[api.AgentInfo]:
    return [
        api.AgentInfo(
            name=a.name,
            description=a.description or "",
            default_model=a.default_model,
            permissions=a.permissions,
            sandbox=a.sandbox,
        )
        for a in agents(definitions)
    ]


def model_list(definitions: Definitions, agent_name: str | None) -> api.ModelList:
    """Every model, with the agent's default first-class: the agent's own default, else the first model."""
    default: ModelDefinition | None = definitions.models[0] if definitions.models else None
    if agent_name:
        agent = find_agent(definitions, agent_name)
        if agent.default_model is not None:
            default = next((m for m in definitions.models if m.ref == agent.default_model), default)
    return api.ModelList(models=list(definitions.models), agent_default_model=default.ref if default else None)


def executor_details(definitions: Definitions) -> list[api.ExecutorDetails]:
    local = api.ExecutorDetails(id=LOCAL_EXECUTOR, kind="local", description=LOCAL_EXECUTOR_DESCRIPTION)
    configured = [
        api.ExecutorDetails(id=e.id, kind=e.kind, description=e.description or "")
        for e in definitions.executors
        if e.id != LOCAL_EXECUTOR
    ]
    return [local, *configured]


def hook_infos(definitions: Definitions) -> list[api.HookInfo]:
    return [
        api.HookInfo(name=h.name, event=h.event, command=h.command, matcher=h.matcher, timeout_ms=h.timeout_ms)
        for h in definitions.hooks
    ]


def check_model(definitions: Definitions, selection: ModelSelection | None, path: str) -> ModelSelection | None:
    """The selection, if its model (when it names one) is defined."""
    if selection is None or selection.model is None:
        return selection
    ref = selection.model
    if not any(m.ref == ref for m in definitions.models):
        raise NotFound(f"model not found: {ref.provider}/{ref.name} @ {path}")
    return selection


def check_executor(definitions: Definitions, executor_id: str | None, path: str) -> str:
    if not executor_id:
        return LOCAL_EXECUTOR
    known = {executor.id for executor in executor_details(definitions)}
    if executor_id not in known:
        raise NotFound(f"executor not found: {executor_id} @ {path}")
    return executor_id
