"""One MCP server: connected lazily by a background task, with a status a UI can show.

The task owns the SDK's client for its whole life (its task groups and cancel scopes must be
entered and left by the same task); everything else reads state the task publishes here.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from openvaala_lsp.definitions import MCPServerDefinition
from openvaala_lsp.mcp.errors import describe
from openvaala_lsp.mcp.model import DEFAULT_TOOL_TIMEOUT, Launch, MCPToolSpec, Mode, ServerSession, Status
from openvaala_lsp.tools.base import ToolOutput

logger = logging.getLogger(__name__)

DEFAULT_STARTUP_TIMEOUT = 60.0
"""Seconds a server may take to answer the handshake and list its tools before it is `failed`."""

CLOSE_TIMEOUT = 10.0
"""Seconds a close may take (the SDK's stdio shutdown alone allows about 6) before the task is
cancelled outright."""

MISSING_SDK = "the `mcp` package is not installed (install openvaala-lsp with the `mcp` extra)"


class MCPServerConnection:
    def __init__(
        self,
        definition: MCPServerDefinition,
        *,
        environment: Mapping[str, str] | None = None,
        cwd: str | None = None,
        mode: Mode = "auto",
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        on_tools_changed: Callable[[MCPServerConnection], None] | None = None,
    ) -> None:
        """`environment` is what a stdio server's process gets (the conversation's, never the
        host's; the definition's `env` is merged over it) and `cwd` its working directory.
        `on_tools_changed` is called whenever `tools` changes: the server became ready, reported
        a new list, or failed."""
        self.launch = Launch(
            definition=copy.deepcopy(definition),  # the caller may edit its object; compare to a snapshot
            environment=dict(environment or {}),
            cwd=cwd,
            mode=mode,
            startup_timeout=startup_timeout,
        )
        self._on_tools_changed = on_tools_changed
        self._status: Status = "starting"
        self._error: str | None = None
        self._tools: list[MCPToolSpec] = []
        self._session: ServerSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()  # ready or failed
        self._stop = asyncio.Event()
        self._cancel_startup: Callable[[], None] | None = None
        self._closed = False

    @property
    def definition(self) -> MCPServerDefinition:
        return self.launch.definition

    @property
    def name(self) -> str:
        return self.launch.definition.name

    @property
    def started(self) -> bool:
        return self._task is not None

    @property
    def status(self) -> Status:
        """`starting` also before `start()`: a configured server starts on first use."""
        return self._status

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def tools(self) -> list[MCPToolSpec]:
        return list(self._tools)

    @property
    def protocol_version(self) -> str | None:
        """The negotiated MCP revision while ready: `2026-07-28` or a handshake-era one."""
        return self._session.protocol_version if self._session is not None else None

    def start(self) -> None:
        """Starts connecting in the background; returns at once. Does nothing if already started."""
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp-server:{self.name}")

    async def wait_ready(self, timeout: float) -> bool:  # noqa: ASYNC109 - the waiting is the API
        """Waits at most `timeout` seconds for a started server to become ready or fail."""
        if self._task is not None and not self._settled.is_set() and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), timeout)
        return self._status == "ready"

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout: float = DEFAULT_TOOL_TIMEOUT,  # noqa: ASYNC109 - the SDK bounds each request itself
    ) -> ToolOutput:
        """Calls the server's tool `name`. Never raises except for cancellation: errors, the
        server's `isError` results and timeouts are `is_error` outputs."""
        session = self._session
        if session is None or self._status != "ready":
            state = f"failed: {self._error}" if self._status == "failed" else "still starting"
            return ToolOutput(text=f"MCP server {self.name!r} is not available ({state})", is_error=True)
        return await session.call_tool(name, arguments, timeout)

    async def close(self) -> None:
        """Stops the server (its process, for stdio) and waits until it is gone."""
        self._closed = True
        task = self._task
        if task is None:
            return
        self._stop.set()
        if self._cancel_startup is not None:
            self._cancel_startup()
        try:
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
        except TimeoutError:
            logger.warning("MCP server %r did not stop in time; cancelling its task", self.name)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._status != "failed":
            self._status, self._error = "failed", "closed"
        self._tools = []

    async def _run(self) -> None:
        try:
            from openvaala_lsp.mcp import sdk  # loads the `mcp` package: only now that a server is used
        except ImportError as error:
            logger.debug("cannot import the mcp SDK", exc_info=error)
            self._fail(MISSING_SDK)
            return
        try:
            await sdk.serve(self.launch, self)
        except sdk.ServerFailure as failure:
            self._fail(str(failure))
        except Exception as error:  # a bug of ours or the SDK's must still end as a status
            logger.exception("MCP server %r: unexpected failure", self.name)
            self._fail(describe(error))
        else:
            if not self._closed:
                self._fail("the connection ended")
        finally:
            self._session = None
            self._settled.set()

    def _fail(self, error: str) -> None:
        if self._closed:
            return
        logger.warning("MCP server %r failed: %s", self.name, error)
        was_ready = self._status == "ready"
        self._status = "failed"
        self._error = error
        self._session = None
        self._settled.set()
        self._tools = []
        if was_ready:
            self._tools_changed()

    def _tools_changed(self) -> None:
        if self._on_tools_changed is not None:
            try:
                self._on_tools_changed(self)
            except Exception:
                logger.exception("on_tools_changed callback of MCP server %r failed", self.name)

    # SessionLink: called by the background task

    def begin(self, cancel: Callable[[], None]) -> None:
        self._cancel_startup = cancel
        if self._closed:
            cancel()

    def connected(self, session: ServerSession, tools: list[MCPToolSpec]) -> None:
        self._cancel_startup = None  # from now on a close stops the session gracefully
        self._session = session
        self._status = "ready"
        self._error = None
        self._settled.set()
        self._tools = tools
        self._tools_changed()

    def tools_listed(self, tools: list[MCPToolSpec]) -> None:
        if tools != self._tools:
            self._tools = tools
            self._tools_changed()

    async def stopping(self) -> None:
        await self._stop.wait()
