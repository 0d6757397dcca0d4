"""Trusted workspace folders. A project's `.openvaala/config.toml` comes with the repository, so an
untrusted one may not run commands (hooks, MCP servers), choose executors, or decide where prompts go:
it may neither add a model nor change one the user defined (a model with the user's `ref` but the
project's `baseUrl` would receive every prompt, key or no key), nor set an agent's permissions or
sandbox (a repository could otherwise let its agent run anything unasked). The user trusts a folder with
`openvaala trust`, which adds it to the `trusted-folders` file of the user configuration.

The agents an untrusted project defines (in its file or as markdown) get no more than the user's
default rules: the permissions and sandbox of the user's `default` agent (none: the runtime's
defaults), or, for one of the same name as an agent defined before (by the user), that agent's. They
hand tasks only to agents with the user's default rules, so no sub-agent lends them more.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from openvaala_lsp.definitions import AgentDefinition, Definitions, Permissions, Sandbox

TRUST_FILE = "trusted-folders"
DEFAULT_AGENT = "default"
Guards = tuple[Permissions | None, Sandbox | None]  # an agent's permissions and sandbox


def trust_file(config_dir: Path) -> Path:
    return config_dir / TRUST_FILE


def trusted_folders(config_dir: Path) -> set[str]:
    """The real paths listed in the trust file, one per line (`#` starts a comment)."""
    try:
        lines = trust_file(config_dir).read_text().splitlines()
    except FileNotFoundError:
        return set()
    entries = (line.split("#", 1)[0].strip() for line in lines)
    return {os.path.realpath(entry) for entry in entries if entry}


def is_trusted(folder: Path, trusted: set[str]) -> bool:
    """A folder is trusted when it or one of its parents is listed."""
    real = Path(os.path.realpath(folder))
    return any(str(candidate) in trusted for candidate in (real, *real.parents))


def trust(folder: Path, config_dir: Path) -> bool:
    """Adds `folder` to the trust file; False if it was trusted already."""
    if is_trusted(folder, trusted_folders(config_dir)):
        return False
    path = trust_file(config_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write(os.path.realpath(folder) + "\n")
    return True


def untrusted_view(definitions: Definitions) -> tuple[Definitions, list[str]]:
    """What an untrusted project may define, and the names of what it may not."""
    refused = [f"hook {h.name}" for h in definitions.hooks]
    refused += [f"MCP server {s.name}" for s in definitions.mcp_servers]
    refused += [f"executor {e.id}" for e in definitions.executors]
    refused += [f"model {m.ref.provider}/{m.ref.name}" for m in definitions.models]
    # what an agent may do unasked is the user's to loosen: the user's own rules for it stay
    refused += [f"permissions of agent {a.name}" for a in definitions.agents if a.permissions is not None]
    refused += [f"sandbox of agent {a.name}" for a in definitions.agents if a.sandbox is not None]
    agents = [attrs.evolve(agent, permissions=None, sandbox=None) for agent in definitions.agents]
    return Definitions(agents=agents, skills=definitions.skills), refused


def guards_of(agent: AgentDefinition | None) -> Guards:
    return (agent.permissions, agent.sandbox) if agent is not None else (None, None)


def default_guards(user: Definitions) -> Guards:
    """The rules of the user's `default` agent (the runtime's defaults without one)."""
    return guards_of(next((agent for agent in user.agents if agent.name == DEFAULT_AGENT), None))


def with_user_guards(untrusted: Definitions, defined: set[str], guards: Guards) -> Definitions:
    """An untrusted project's definitions with its agents' rules set: an agent of a name defined
    before keeps that one's (merging keeps the earlier rules when the later sets none), any other
    gets `guards`."""
    agents = [
        attrs.evolve(agent, permissions=None, sandbox=None)
        if agent.name in defined
        else attrs.evolve(agent, permissions=guards[0], sandbox=guards[1])
        for agent in untrusted.agents
    ]
    return attrs.evolve(untrusted, agents=agents)


def confined_sub_agents(agent: AgentDefinition, agents: list[AgentDefinition], guards: Guards) -> list[str]:
    """The sub-agents an untrusted project's agent names that it may not hand tasks to: any with
    rules other than the user's default ones."""
    by_name = {other.name: other for other in agents}
    return [name for name in agent.sub_agents or () if name in by_name and guards_of(by_name[name]) != guards]
