"""The names the model sees: `mcp__<server>__<tool>`, limited to what every provider accepts
(`[A-Za-z0-9_-]`, at most 64 characters) and unique within a conversation."""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
PREFIX = "mcp__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    return _INVALID.sub("_", part) or "_"


def _suffix(server: str, tool: str) -> str:
    # From the original names, so a shortened or disambiguated name is stable across restarts.
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


def tool_name(server: str, tool: str) -> str:
    name = f"{PREFIX}{sanitize(server)}__{sanitize(tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - 9]}_{_suffix(server, tool)}"


def unique_names(pairs: list[tuple[str, str]]) -> list[str]:
    """One exposed name per (server, tool), in order; a clash (two originals that sanitize
    alike) gives the later one a hash suffix."""
    taken: set[str] = set()
    names: list[str] = []
    for server, tool in pairs:
        name = tool_name(server, tool)
        if name in taken:
            name = f"{name[: MAX_NAME - 9]}_{_suffix(server, tool)}"
        taken.add(name)
        names.append(name)
    return names
