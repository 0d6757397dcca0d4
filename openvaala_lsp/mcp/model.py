"""Plain types shared by the MCP modules; none of them depends on the `mcp` package."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

import attrs

from openvaala_lsp.definitions import MCPServerDefinition
from openvaala_lsp.tools.base import ToolOutput

DEFAULT_TOOL_TIMEOUT = 120.0
"""Seconds a tool call may take before it becomes an error output."""

Status = Literal["starting", "ready", "failed"]
Mode = Literal["auto", "legacy"]


@attrs.frozen(kw_only=True)
class MCPToolSpec:
    """One tool as the server lists it (its own name, not the name the model sees)."""

    name: str
    description: str | None = None
    title: str | None = None
    input_schema: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Launch:
    """Everything needed to connect to one server."""

    definition: MCPServerDefinition
    environment: dict[str, str]  # the conversation's environment, not the host's
    cwd: str | None
    mode: Mode
    startup_timeout: float

    def child_environment(self) -> dict[str, str]:
        return {**self.environment, **(self.definition.env or {})}


class ServerSession(Protocol):
    """A connected server, as the SDK boundary (`sdk.py`) exposes it to a connection."""

    protocol_version: str

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolOutput:  # noqa: ASYNC109
        """Never raises except for cancellation."""
        ...


class SessionLink(Protocol):
    """What the background task reports to its connection, and how it is told to stop."""

    def begin(self, cancel: Callable[[], None]) -> None:
        """The task started; `cancel` aborts it (used to close a server that is still starting)."""
        ...

    def connected(self, session: ServerSession, tools: list[MCPToolSpec]) -> None:
        """The server answered the handshake and listed its tools."""
        ...

    def tools_listed(self, tools: list[MCPToolSpec]) -> None:
        """The server's tool list was fetched again after a change notification."""
        ...

    async def stopping(self) -> None:
        """Returns once the connection is asked to close."""
        ...


# What editors see of MCP servers (getMcpServers) and send of their own (setClientMcpServers)


@attrs.define(kw_only=True)
class MCPServerInfo:
    name: str
    transport: str
    status: str  # "starting" | "ready" | "failed"
    error: str | None = None
    tools: list[str] = attrs.Factory(list)
    client_id: str | None = None


@attrs.define(kw_only=True)
class ClientTool:
    name: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.Factory(lambda: {"type": "object", "properties": {}})


@attrs.define(kw_only=True)
class ClientMCPServer:
    name: str
    tools: list[ClientTool] = attrs.Factory(list)
