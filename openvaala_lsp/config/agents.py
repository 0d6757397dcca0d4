"""Agents written as markdown files (Claude Code subagents): front matter plus the system prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openvaala_lsp.definitions import AgentDefinition
from openvaala_lsp.protocol.converter import ParamsError, structure

from . import frontmatter
from .errors import ConfigError, split_problem
from .tomlscan import parse_wire_path
from .validate import parse_model_ref

# Claude Code's tool names for the tools we have under another name
CLAUDE_TOOLS = {
    "Bash": "shell",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Glob": "glob",
    "Grep": "grep",
}
# Claude Code's model aliases name no provider: the agent then runs on the conversation's model
CLAUDE_MODEL_ALIASES = frozenset({"inherit", "sonnet", "opus", "haiku"})
# wire field -> the front matter key it came from, for error messages
_KEYS = {"defaultModel": "model", "instructions": "body"}


def load_agent_file(path: Path) -> tuple[AgentDefinition | None, list[ConfigError]]:
    try:
        matter = frontmatter.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [ConfigError(path=path, line=None, field=None, message=f"cannot read: {exc}")]
    if matter.error:
        return None, [ConfigError(path=path, line=1, field=None, message=matter.error)]
    data = matter.data
    wire: dict[str, Any] = {"name": data.get("name") or path.stem}
    problems: list[tuple[str, str]] = []
    if data.get("description") is not None:
        wire["description"] = data["description"]
    model = data.get("model")
    if isinstance(model, str) and model not in CLAUDE_MODEL_ALIASES:
        ref = parse_model_ref(model)
        if ref is None:
            problems.append(("model", f'expected "provider/name", got {model!r}'))
        wire["defaultModel"] = ref
    elif model is not None and not isinstance(model, str):
        problems.append(("model", f'expected "provider/name", got {model!r}'))
    for key in ("tools", "skills", "mcpServers"):
        names, problem = _names(data.get(key))
        if problem:
            problems.append((key, problem))
        elif names is not None:
            wire[key] = [CLAUDE_TOOLS.get(n.split("(")[0], n) for n in names] if key == "tools" else names
    if "tools" in wire:
        wire["tools"] = list(dict.fromkeys(wire["tools"]))  # Edit and MultiEdit are both `edit`
    wire["instructions"] = matter.body.strip() or None
    if not problems:
        try:
            return structure(wire, AgentDefinition), []
        except ParamsError as exc:
            problems = [_front_matter_key(*split_problem(p)) for p in exc.problems]
    return None, [
        ConfigError(path=path, line=matter.lines.get(key), field=key, message=message) for key, message in problems
    ]


def _names(value: Any) -> tuple[list[str] | None, str | None]:
    """A YAML list of names, or Claude Code's `Read, Grep, Glob`."""
    if value is None:
        return None, None
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()], None
    if isinstance(value, list) and all(isinstance(n, str) for n in value):
        return [n.strip() for n in value], None
    return None, "expected a list of names or a comma-separated string"


def _front_matter_key(wire_path: str, message: str) -> tuple[str, str]:
    parts = parse_wire_path(wire_path)
    first = str(parts[0]) if parts else "name"
    return _KEYS.get(first, first), message
