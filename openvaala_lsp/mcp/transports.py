"""The two transports: stdio (a child process in the conversation's environment and directory,
its stderr logged) and streamable HTTP (with the definition's headers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING

import anyio
import httpx2
from mcp import StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from openvaala_lsp.mcp.errors import BadDefinition
from openvaala_lsp.mcp.model import Launch
from openvaala_lsp.mcp.stderr import StderrPipe

if TYPE_CHECKING:  # typing only: these modules are private to the SDK
    from mcp.client._transport import ReadStream, TransportStreams
    from mcp.shared.message import SessionMessage


class _EndWatch:
    """The server's messages, passed through, noting their end: the stdio transport ends the
    stream when the server's stdout closes (it exited), while our own shutdown closes it instead."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _EndWatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def _stdio(
    params: StdioServerParameters, stderr: StderrPipe, ended: anyio.Event
) -> AsyncIterator[TransportStreams]:
    try:
        async with stdio_client(params, errlog=stderr.writer) as (read_stream, write_stream):
            stderr.close_writer()  # the child holds its own copy; ours would keep the pipe open
            yield _EndWatch(read_stream, ended), write_stream
    finally:
        stderr.close_writer()


@asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    # The SDK's own defaults (30 s, 300 s for reads of a held-open stream) plus our headers.
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def transport(launch: Launch, stderr: StderrPipe | None, ended: anyio.Event) -> Transport:
    """The SDK transport for the definition; a stdio server's stderr goes to `stderr` and the end
    of its output sets `ended`."""
    definition = launch.definition
    if definition.transport == "stdio":
        if not definition.command:
            raise BadDefinition("a stdio server needs a command")
        assert stderr is not None
        params = StdioServerParameters(
            command=definition.command,
            args=list(definition.args or []),
            env=launch.child_environment(),
            cwd=launch.cwd,
        )
        return _stdio(params, stderr, ended)
    if definition.transport == "http":
        if not definition.url:
            raise BadDefinition("an http server needs a url")
        return _http(definition.url, dict(definition.headers or {}))
    raise BadDefinition(f"unknown transport {definition.transport!r} (expected 'stdio' or 'http')")
