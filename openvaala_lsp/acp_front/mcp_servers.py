"""The ACP editor's MCP servers (`mcpServers` of session/new and session/load): this front starts
them with the runtime's own MCP client and gives their tools to the conversation as its connection's
client tools (`setClientMcpServers`); the runtime's calls come back as `openvaala/callClientTool`
and are answered here. So the servers live as long as the editor, in its environment, as ACP means."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio

from openvaala_lsp.definitions import MCPServerDefinition
from openvaala_lsp.mcp.connection import MCPServerConnection

logger = logging.getLogger(__name__)

STARTUP_SECONDS = 30.0  # a server not ready by then is left out (its error logged)


def definition(server: Any) -> MCPServerDefinition | None:
    """The runtime's definition of an ACP server description; None for transports not taken (SSE)."""
    if isinstance(server, McpServerStdio):
        return MCPServerDefinition(
            name=server.name,
            transport="stdio",
            command=server.command,
            args=list(server.args),
            env={v.name: v.value for v in server.env},
        )
    if isinstance(server, HttpMcpServer):
        return MCPServerDefinition(
            name=server.name, transport="http", url=server.url, headers={h.name: h.value for h in server.headers}
        )
    return None


class EditorMcpServers:
    """One session's servers, by name."""

    def __init__(self, servers: list[Any], cwd: str) -> None:
        self.connections: dict[str, MCPServerConnection] = {}
        for server in servers:
            defined = definition(server)
            if defined is None:
                logger.warning("MCP server %r: only stdio and HTTP servers are taken", getattr(server, "name", ""))
            elif defined.name not in self.connections:
                self.connections[defined.name] = MCPServerConnection(defined, environment=os.environ, cwd=cwd)

    async def start(self) -> list[dict[str, Any]]:
        """Starts every server and waits for them (bounded): `setClientMcpServers`'s servers."""
        for connection in self.connections.values():
            connection.start()
        await asyncio.gather(*(c.wait_ready(STARTUP_SECONDS) for c in self.connections.values()))
        servers = []
        for name, connection in self.connections.items():
            if connection.status != "ready":
                logger.warning("MCP server %r not ready: %s", name, connection.error or connection.status)
                continue
            tools = [
                {"name": t.name, "description": t.description or t.title or "", "inputSchema": t.input_schema or {}}
                for t in connection.tools
            ]
            servers.append({"name": name, "tools": tools})
        return servers

    async def call(self, server: str, tool: str, arguments: Any) -> dict[str, Any]:
        connection = self.connections.get(server)
        if connection is None:
            return {"content": [{"type": "text", "text": f"no MCP server {server!r} here"}], "isError": True}
        output = await connection.call_tool(tool, arguments if isinstance(arguments, dict) else {})
        return {"content": [{"type": "text", "text": output.text}], "isError": output.is_error}

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
