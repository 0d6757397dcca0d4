"""The local tool set: fresh instances for a conversation, and lookup by name."""

from __future__ import annotations

from openvaala_lsp.tools.base import Tool
from openvaala_lsp.tools.files import EditTool, ReadFileTool, WriteFileTool
from openvaala_lsp.tools.listing import GlobTool
from openvaala_lsp.tools.search import GrepTool
from openvaala_lsp.tools.shell import ShellTool


def local_tools() -> list[Tool]:
    """New instances of every local tool, in the order they are offered to a model."""
    return [ShellTool(), ReadFileTool(), WriteFileTool(), EditTool(), GlobTool(), GrepTool()]


LOCAL_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in local_tools())


def local_tool(name: str) -> Tool | None:
    """A new instance of the local tool called `name`, or None if there is none."""
    for tool in local_tools():
        if tool.name == name:
            return tool
    return None
