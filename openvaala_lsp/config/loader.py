"""`load_definitions`: every configuration source of the user and the workspace, merged."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from openvaala_lsp import paths
from openvaala_lsp.definitions import Definitions

from .agents import load_agent_file
from .errors import ConfigError
from .merge import merge_definitions
from .skills import load_skill_file
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


def load_definitions(folders: Sequence[str | os.PathLike[str]], *, config_dir: Path | None = None) -> LoadedDefinitions:
    """Never raises for a bad file or directory: its errors are returned and the rest still loads.

    `~/.claude/skills` is read only with the real user configuration (no OPENVAALA_HOME and no
    `config_dir` given), so tests and scripts with a home of their own see nothing of the user's.
    """
    claude_home = Path.home() / ".claude" if config_dir is None and paths.home() is None else None
    found = _Collector()
    for scope in scopes([folder_path(f) for f in folders], config_dir or paths.config_dir(), claude_home):
        for directory in scope.skill_dirs:
            _guarded(found, directory, _load_skills)
        for directory in scope.agent_dirs:
            _guarded(found, directory, _load_agents)
        found.sources.append(scope.config_file)
        found.add(*load_toml_file(scope.config_file))
    return LoadedDefinitions(
        definitions=merge_definitions(found.layers), errors=found.errors, sources=list(dict.fromkeys(found.sources))
    )


def _guarded(found: _Collector, directory: Path, load: Callable[[_Collector, Path], None]) -> None:
    found.sources.append(directory)
    try:
        load(found, directory)
    except OSError as exc:  # an unreadable directory is one error, not a failed load
        found.errors.append(ConfigError(path=directory, line=None, field=None, message=f"cannot read: {exc}"))


def _load_skills(found: _Collector, directory: Path) -> None:
    for skill_dir in skill_dirs(directory):
        skill_file = skill_dir / "SKILL.md"
        found.sources += [skill_dir, skill_file]  # a SKILL.md may appear later in an existing directory
        if skill_file.is_file():
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
