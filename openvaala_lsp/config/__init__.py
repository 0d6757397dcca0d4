"""Configuration files: definitions (models, agents, executors, hooks, MCP servers, skills) from
the user's `config.toml`, each workspace folder's `.openvaala/config.toml`, and markdown agents and
skills in `.openvaala/`, `.agents/` and `.claude/` folders, merged by key, validated with errors that
name file, line and field, and reloaded when files change."""

from __future__ import annotations

from .agents import CLAUDE_TOOLS
from .errors import ConfigError
from .loader import LoadedDefinitions, load_definitions
from .skills import read_skill_body
from .tomlfile import load_toml_file
from .watcher import DefinitionsWatcher
from .writer import write_user_config

__all__ = [
    "CLAUDE_TOOLS",
    "ConfigError",
    "DefinitionsWatcher",
    "LoadedDefinitions",
    "load_definitions",
    "load_toml_file",
    "read_skill_body",
    "write_user_config",
]
