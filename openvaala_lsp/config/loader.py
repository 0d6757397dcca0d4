"""`load_definitions`: every configuration source of the user and the workspace, merged."""

from __future__ import annotations

import functools
import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from openvaala_lsp import paths
from openvaala_lsp.definitions import AgentDefinition, Definitions

from . import trust
from .agents import load_agent_file
from .errors import ConfigError
from .merge import merge_definitions
from .skills import leaves, load_skill_file, skills_within
from .sources import markdown_files, scopes, skill_dirs
from .tomlfile import load_toml_file


@attrs.define
class LoadedDefinitions:
    definitions: Definitions
    errors: list[ConfigError]
    sources: list[Path]  # every file read or directory looked at, present or not: what a watcher stats


@attrs.define
class _Collector:
    layers: list[Definitions] = attrs.Factory(list)  # lowest precedence first
    errors: list[ConfigError] = attrs.Factory(list)
    sources: list[Path] = attrs.Factory(list)

    def add(self, definitions: Definitions | None, errors: list[ConfigError]) -> None:
        self.errors += errors
        if definitions is not None:
            self.layers.append(definitions)


def load_definitions(
    folders: Sequence[str | os.PathLike[str]], *, config_dir: Path | None = None, require_trust: bool = False
) -> LoadedDefinitions:
    """Never raises for a bad file or directory: its errors are returned and the rest still loads.

    With `require_trust`, a project file of a folder the user has not trusted contributes only what
    cannot run commands or send a key elsewhere (see `trust.untrusted_view`); the rest is reported.
    Its agents, in its file or as markdown, get no more than the user's default rules
    (`trust.with_user_guards`). A project's skills lie inside its folder, each skill's file inside
    the skill's own directory; one that leads out is reported and left out.

    `~/.claude/skills` is read only with the real user configuration (no OPENVAALA_HOME and no
    `config_dir` given), so tests and scripts with a home of their own see nothing of the user's.
    """
    claude_home = Path.home() / ".claude" if config_dir is None and paths.home() is None else None
    found = _Collector()
    config_dir = config_dir or paths.config_dir()
    trusted = trust.trusted_folders(config_dir) if require_trust else set()
    if require_trust:
        found.sources.append(trust.trust_file(config_dir))  # trusting a folder reloads its definitions
    project_folders = [folder_path(f) for f in folders]
    guards: trust.Guards = (None, None)
    untrusted_agents: dict[str, Path | None] = {}  # agent name -> the untrusted folder of its last definition
    for index, scope in enumerate(scopes(project_folders, config_dir, claude_home)):
        folder = project_folders[index - 1] if index else None  # scope 0 is the user's
        untrusted = folder is not None and require_trust and not trust.is_trusted(folder, trusted)
        before = len(found.layers)
        for directory in scope.skill_dirs:
            _guarded(found, directory, functools.partial(_load_skills, within=folder))
        for directory in scope.agent_dirs:
            _guarded(found, directory, _load_agents)
        found.sources.append(scope.config_file)
        definitions, errors = load_toml_file(scope.config_file, user=folder is None)
        if definitions is not None and folder is not None:
            definitions, outside = skills_within(definitions, folder, scope.config_file)
            errors = [*errors, *outside]
        if definitions is not None and untrusted:
            definitions, refused = trust.untrusted_view(definitions)
            if refused:
                message = f"ignored until you trust {folder} (run `openvaala trust` there): {', '.join(refused)}"
                errors = [*errors, ConfigError(path=scope.config_file, line=None, field=None, message=message)]
        found.add(definitions, errors)
        if untrusted:
            defined = {agent.name for layer in found.layers[:before] for agent in layer.agents}
            found.layers[before:] = [trust.with_user_guards(layer, defined, guards) for layer in found.layers[before:]]
        untrusted_agents |= {
            agent.name: folder if untrusted else None for layer in found.layers[before:] for agent in layer.agents
        }
        if index == 0:
            guards = trust.default_guards(merge_definitions(found.layers))
    merged = merge_definitions(found.layers)
    merged.agents = [
        _confined(agent, merged, guards, untrusted_agents.get(agent.name), found) for agent in merged.agents
    ]
    return LoadedDefinitions(definitions=merged, errors=found.errors, sources=list(dict.fromkeys(found.sources)))


def _confined(
    agent: AgentDefinition, merged: Definitions, guards: trust.Guards, untrusted: Path | None, found: _Collector
) -> AgentDefinition:
    """An untrusted project's agent without the sub-agents it may not hand tasks to (reported)."""
    refused = trust.confined_sub_agents(agent, merged.agents, guards) if untrusted is not None else []
    if not refused:
        return agent
    assert untrusted is not None
    message = (
        f"sub-agents {', '.join(refused)} of agent {agent.name} ignored until you trust {untrusted}: an untrusted "
        "project's agent hands tasks only to agents with your default agent's permissions and sandbox"
    )
    found.errors.append(ConfigError(path=untrusted, line=None, field=None, message=message))
    return attrs.evolve(agent, sub_agents=[name for name in agent.sub_agents or () if name not in refused])


def _guarded(found: _Collector, directory: Path, load: Callable[[_Collector, Path], None]) -> None:
    found.sources.append(directory)
    try:
        load(found, directory)
    except OSError as exc:  # an unreadable directory is one error, not a failed load
        found.errors.append(ConfigError(path=directory, line=None, field=None, message=f"cannot read: {exc}"))


def _load_skills(found: _Collector, directory: Path, within: Path | None) -> None:
    """The skills of a skills folder; a project's (`within` its folder) only from inside it."""
    for skill_dir in skill_dirs(directory):
        skill_file = skill_dir / "SKILL.md"
        found.sources += [skill_dir, skill_file]  # a SKILL.md may appear later in an existing directory
        if not skill_file.is_file():
            continue
        home = within if within is not None else skill_dir  # a user's skill folder may be a link to elsewhere
        if leaves(str(skill_file), home) or leaves(str(skill_file), skill_dir):
            message = f"SKILL.md leads out of {home} to {os.path.realpath(skill_file)}: left out"
            found.add(None, [ConfigError(path=skill_file, line=None, field=None, message=message)])
            continue
        skill, errors = load_skill_file(skill_file)
        found.add(Definitions(skills=[skill]) if skill else None, errors)


def _load_agents(found: _Collector, directory: Path) -> None:
    for agent_file in markdown_files(directory):
        found.sources.append(agent_file)
        agent, errors = load_agent_file(agent_file)
        found.add(Definitions(agents=[agent]) if agent else None, errors)


def folder_path(folder: str | os.PathLike[str]) -> Path:
    """A workspace folder as a path; LSP clients may hand over `file://` URIs."""
    text = os.fspath(folder)
    if text.startswith("file://"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(text).path))
    return Path(text)
