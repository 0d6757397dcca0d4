"""MCP servers as tool sources: one `MCPServerConnection` per configured server, an `MCPManager`
per conversation. The official `mcp` package (an optional extra) is imported only inside a
connection's background task, so a runtime with no MCP server configured never loads it."""

from openvaala_lsp.mcp.connection import DEFAULT_STARTUP_TIMEOUT, MCPServerConnection
from openvaala_lsp.mcp.manager import MCPManager
from openvaala_lsp.mcp.model import DEFAULT_TOOL_TIMEOUT, MCPToolSpec
from openvaala_lsp.mcp.tools import MCPTool

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "DEFAULT_TOOL_TIMEOUT",
    "MCPManager",
    "MCPServerConnection",
    "MCPTool",
    "MCPToolSpec",
]
