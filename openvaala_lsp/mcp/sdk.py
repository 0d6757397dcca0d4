"""The boundary with the official `mcp` package: this module and those it imports (transports,
content) are the only ones that import it, loaded from a connection's background task when a
server is first started.

Protocol era: `mode="auto"` (the default) probes the 2026-07-28 era and falls back to the
initialize handshake. Tool-list changes arrive as pushed `notifications/tools/list_changed` in the
handshake era (seen by the message handler) and only on a `subscriptions/listen` stream in the 2026
era (opened by a watcher), so both paths feed one coalescing refetch.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client import IncomingMessage
from mcp.client.subscriptions import SubscriptionLost, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from openvaala_lsp import __version__
from openvaala_lsp.mcp.content import result_text
from openvaala_lsp.mcp.errors import ServerExited, StartupTimeout, describe, leaf
from openvaala_lsp.mcp.model import Launch, MCPToolSpec, SessionLink
from openvaala_lsp.mcp.stderr import StderrPipe
from openvaala_lsp.mcp.transports import transport
from openvaala_lsp.tools.base import ToolOutput

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT = 60.0
"""Seconds for the short requests (tools/list, the listen acknowledgment)."""

TIMEOUT_GRACE = 5.0
"""A call's outer bound beyond its own timeout: covers retries the SDK makes inside one call."""

STDERR_SETTLE = 1.0
"""Seconds a failed server's stderr may take to arrive, to explain the failure."""

MAX_PAGES = 100
LISTEN_RETRY_MAX = 30.0


class ServerFailure(Exception):
    """The server failed; the message is meant for the user as it is."""


class _Changes:
    """A level-triggered "tools changed" flag: many notifications, one refetch."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def mark(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


class _Session:
    def __init__(self, client: Client, server: str) -> None:
        self._client = client
        self._server = server
        self.protocol_version = client.protocol_version

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolOutput:  # noqa: ASYNC109
        label = f"MCP tool {name!r} of server {self._server!r}"
        timed_out = ToolOutput(text=f"{label} timed out after {timeout:g} s", is_error=True)
        try:
            with anyio.fail_after(timeout + TIMEOUT_GRACE):
                result = await self._client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            return timed_out
        except MCPError as error:
            if error.code == types.REQUEST_TIMEOUT:
                return timed_out
            return ToolOutput(text=f"{label} failed: {error.message} (error {error.code})", is_error=True)
        except ValidationError as error:
            return ToolOutput(text=f"{label} returned an invalid result: {error}", is_error=True)
        except Exception as error:  # the Tool contract: failures are outputs
            return ToolOutput(text=f"{label} failed: {describe(error)}", is_error=True)
        return ToolOutput(text=result_text(result), is_error=result.is_error)


def _spec(tool: types.Tool) -> MCPToolSpec:
    return MCPToolSpec(name=tool.name, description=tool.description, title=tool.title, input_schema=tool.input_schema)


async def _list_tools(client: Client) -> list[MCPToolSpec]:
    tools: list[MCPToolSpec] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):  # a paginator that never ends cannot hang us
        page = await client.list_tools(cursor=cursor)
        tools.extend(_spec(tool) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _announces_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return tools is not None and bool(tools.list_changed)


async def _refetch(client: Client, changes: _Changes, link: SessionLink) -> None:
    while True:
        await changes.wait()
        try:
            tools = await _list_tools(client)
        except Exception as error:  # keep watching; the next change retries
            logger.warning("refetching the tools of an MCP server failed: %s", describe(error))
            continue
        link.tools_listed(tools)


async def _listen(client: Client, changes: _Changes) -> None:
    """The 2026 era delivers changes only to listeners. No replay: after a drop, re-listen and
    refetch, since anything may have changed meanwhile."""
    delay = 1.0
    resubscribed = False
    while True:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                if resubscribed:
                    changes.mark()
                delay = 1.0
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        changes.mark()
        # An httpx2.TransportError (the server is unreachable) propagates: the connection fails.
        except (SubscriptionLost, TimeoutError) as error:
            logger.info("MCP change subscription ended (%s); listening again", describe(error))
        except MCPError as error:
            if error.code != types.CONNECTION_CLOSED:
                logger.warning("MCP server refused to report tool changes: %s", error.message)
            return
        await anyio.sleep(delay)
        delay = min(delay * 2, LISTEN_RETRY_MAX)
        resubscribed = True


async def _watch_exit(ended: anyio.Event) -> None:
    await ended.wait()
    raise ServerExited("the server process exited")


async def _connect_and_serve(
    launch: Launch, link: SessionLink, scope: anyio.CancelScope, stderr: StderrPipe | None
) -> None:
    changes = _Changes()
    ended = anyio.Event()  # set when a stdio server's output ends

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.mark()

    client = Client(
        transport(launch, stderr, ended),
        mode=launch.mode,
        message_handler=on_message,
        read_timeout_seconds=REQUEST_TIMEOUT,
        cache=None,  # we refetch only on change notifications, which must never be served stale
        client_info=types.Implementation(name="openvaala", version=__version__),
    )
    async with client:
        tools = await _list_tools(client)
        scope.deadline = math.inf  # the startup bound ends here
        link.connected(_Session(client, launch.definition.name), tools)
        async with anyio.create_task_group() as group:
            group.start_soon(_refetch, client, changes, link)
            if _announces_changes(client) and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                group.start_soon(_listen, client, changes)
            if stderr is not None:
                group.start_soon(_watch_exit, ended)
            await link.stopping()
            group.cancel_scope.cancel()


async def _explain(error: BaseException, launch: Launch, stderr: StderrPipe | None) -> str:
    cause = leaf(error)
    definition = launch.definition
    if isinstance(cause, MCPError) and cause.code == types.CONNECTION_CLOSED and stderr is not None:
        text = "the server closed the connection (it exited or crashed)"
    elif isinstance(cause, MCPError):
        text = f"{cause.message} (error {cause.code})"
    elif isinstance(cause, httpx2.TransportError):
        text = f"cannot reach {definition.url}: {cause}"
    else:
        text = describe(cause, command=definition.command, cwd=launch.cwd)
    if stderr is not None:
        await stderr.settle(STDERR_SETTLE)
        if tail := stderr.tail():
            text = f"{text}\nstderr:\n{tail}"
    return text


async def serve(launch: Launch, link: SessionLink) -> None:
    """Connects, reports to `link`, and serves until `link.stopping()` returns. Raises
    `ServerFailure` with a readable message if the server cannot start or goes away."""
    stderr = StderrPipe(launch.definition.name) if launch.definition.transport == "stdio" else None
    failure: BaseException | None = None
    closed = False

    def close() -> None:
        nonlocal closed
        closed = True
        scope.cancel()

    try:
        if stderr is not None:
            await stderr.start()
        with anyio.CancelScope(deadline=anyio.current_time() + launch.startup_timeout) as scope:
            link.begin(close)
            try:
                await _connect_and_serve(launch, link, scope, stderr)
            except Exception as error:
                failure = error
        if failure is None and scope.cancelled_caught and not closed:
            failure = StartupTimeout(f"the server did not start within {launch.startup_timeout:g} s")
        if failure is not None:
            logger.debug("MCP server %r failed", launch.definition.name, exc_info=failure)
            raise ServerFailure(await _explain(failure, launch, stderr)) from failure
    finally:
        if stderr is not None:
            stderr.close()
