"""The MCP servers of one conversation: configured from definitions, started on first use,
offered to the model as tools while they are ready."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from openvaala_lsp.definitions import MCPServerDefinition
from openvaala_lsp.mcp.connection import DEFAULT_STARTUP_TIMEOUT, MCPServerConnection
from openvaala_lsp.mcp.model import DEFAULT_TOOL_TIMEOUT, MCPServerInfo, MCPToolSpec, Mode
from openvaala_lsp.mcp.names import unique_names
from openvaala_lsp.mcp.tools import MCPTool
from openvaala_lsp.tools.base import Tool

logger = logging.getLogger(__name__)


class MCPManager:
    def __init__(
        self,
        *,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        mode: Mode = "auto",
        on_tools_changed: Callable[[str], None] | None = None,
    ) -> None:
        """`on_tools_changed(server_name)` is called when a server's tools appear (it became
        ready), change (it reported a new list) or vanish (it failed)."""
        self._tool_timeout = tool_timeout
        self._startup_timeout = startup_timeout
        self._mode: Mode = mode
        self._on_tools_changed = on_tools_changed
        self._connections: dict[str, MCPServerConnection] = {}
        self._retiring: set[asyncio.Task[None]] = set()

    def configure(
        self, definitions: list[MCPServerDefinition], *, environment: Mapping[str, str], cwd: str | None
    ) -> None:
        """Adopts a new set of servers: new ones start on the next `ensure_started`, removed ones
        stop, and changed ones (a different definition, or for stdio a different environment or
        directory) stop and start again on next use."""
        wanted: dict[str, MCPServerDefinition] = {}
        for definition in definitions:
            if definition.name in wanted:
                logger.warning("MCP server %r is defined twice; the first definition is used", definition.name)
                continue
            wanted[definition.name] = definition
        environment = dict(environment)
        kept: dict[str, MCPServerConnection] = {}
        for name, connection in self._connections.items():
            same = wanted.get(name)
            if same is not None and not self._differs(connection, same, environment, cwd):
                kept[name] = connection
            else:
                self._retire(connection)
        self._connections = {
            name: kept.get(name) or self._connection(definition, environment, cwd)
            for name, definition in wanted.items()
        }

    @staticmethod
    def _differs(
        connection: MCPServerConnection,
        definition: MCPServerDefinition,
        environment: dict[str, str],
        cwd: str | None,
    ) -> bool:
        if connection.definition != definition:
            return True
        launch = connection.launch
        return definition.transport == "stdio" and (launch.environment != environment or launch.cwd != cwd)

    def _connection(
        self, definition: MCPServerDefinition, environment: dict[str, str], cwd: str | None
    ) -> MCPServerConnection:
        return MCPServerConnection(
            definition,
            environment=environment,
            cwd=cwd,
            mode=self._mode,
            startup_timeout=self._startup_timeout,
            on_tools_changed=self._tools_changed,
        )

    def _tools_changed(self, connection: MCPServerConnection) -> None:
        # A retired connection's news is stale: it is no longer this conversation's server.
        if self._connections.get(connection.name) is connection and self._on_tools_changed is not None:
            self._on_tools_changed(connection.name)

    def _retire(self, connection: MCPServerConnection) -> None:
        if not connection.started:
            return
        task = asyncio.get_running_loop().create_task(connection.close(), name=f"mcp-close:{connection.name}")
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    def restart(self, name: str) -> None:
        """Replaces a server's connection with a fresh one (to retry a failed server, say); it
        starts on the next `ensure_started`."""
        old = self._connections.get(name)
        if old is not None:
            self._retire(old)
            self._connections[name] = self._connection(old.definition, old.launch.environment, old.launch.cwd)

    @property
    def connections(self) -> list[MCPServerConnection]:
        return list(self._connections.values())

    async def ensure_started(self, wait: float = 0.0) -> None:
        """Starts every server not started yet and waits at most `wait` seconds for those still
        starting. A slow server is simply not among this turn's tools; it joins a later turn."""
        for connection in self._connections.values():
            connection.start()
        starting = [c for c in self._connections.values() if c.status == "starting"]
        if wait > 0 and starting:
            await asyncio.gather(*(c.wait_ready(wait) for c in starting))

    def _exposed(self) -> list[tuple[MCPServerConnection, MCPToolSpec, str]]:
        pairs = [(c, spec) for c in self._connections.values() if c.status == "ready" for spec in c.tools]
        names = unique_names([(c.name, spec.name) for c, spec in pairs])
        return [(c, spec, name) for (c, spec), name in zip(pairs, names, strict=True)]

    def tools(self) -> list[Tool]:
        """Every ready server's tools, named `mcp__<server>__<tool>`."""
        return [MCPTool(name, c, spec, timeout=self._tool_timeout) for c, spec, name in self._exposed()]

    def infos(self) -> list[MCPServerInfo]:
        exposed: dict[str, list[str]] = {}
        for connection, _, name in self._exposed():
            exposed.setdefault(connection.name, []).append(name)
        return [
            MCPServerInfo(
                name=c.name,
                transport=c.definition.transport,
                status=c.status,
                error=c.error,
                tools=exposed.get(c.name, []),
            )
            for c in self._connections.values()
        ]

    async def close(self) -> None:
        """Stops every server, including those being retired by an earlier `configure`."""
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), *self._retiring, return_exceptions=True)
