"""The ACP front's own link to the runtime: an LSP-framed client of the user's runtime host, reached
like any editor's front (`front.connect`: the hello, starting a host when none runs), or of a runtime
in this process (`--standalone`) over a socket pair. Either way the host side is a plain editor
connection, with its limits and its restart handling."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from openvaala_lsp.wire import framing
from openvaala_lsp.wire.client import LspClient

Notified = Callable[[dict[str, Any]], None]


class HostClient(LspClient):
    """The package's LSP client, handing each notification to `on_notification` as it comes and keeping
    no message (this client lives as long as the editor)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_notification: Notified) -> None:
        super().__init__(reader, writer)
        self.on_notification = on_notification
        self.stop: Callable[[], Awaitable[None]] | None = None  # standalone: stops the runtime
        self.on_lost: Callable[[], None] | None = None  # the connection broke (not when closed by us)
        self._closing = False

    def _broke(self, why: str) -> None:
        super()._broke(why)
        if self.on_lost is not None and not self._closing:
            self.on_lost()

    async def close(self) -> None:
        self._closing = True
        await super().close()

    async def _on_message(self, message: dict[str, Any]) -> None:
        """Nothing kept: a notification goes to `on_notification`, a response to its request's future
        (the base client keeps every message, which a test wants and a process living for days not)."""
        if "method" not in message:
            self._settle(message)
        elif "id" not in message:
            self.on_notification(message)
        else:
            await self._answer(message)

    async def _answer(self, request: dict[str, Any]) -> None:
        """A handler's exception is the request's error (the runtime hears why), never this link's end."""
        try:
            await super()._answer(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = {
                "code": framing.INTERNAL[1],
                "message": str(exc) or type(exc).__name__,
                "data": {"kind": "internal"},
            }
            await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})


async def connect_host(on_notification: Notified) -> HostClient:
    """A connection to the user's runtime host, started when none runs (blocking work in a thread)."""
    from openvaala_lsp.front.connect import connect
    from openvaala_lsp.rundir import ensure_private, run_dir
    from openvaala_lsp.wire import hello as wire_hello

    def reach() -> tuple[socket.socket, bytes]:
        run = run_dir()
        ensure_private(run)
        link = connect(run, wire_hello.front_hello())
        return link.sock, link.leftover

    sock, leftover = await asyncio.to_thread(reach)
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    if leftover:
        reader.feed_data(leftover)
    return HostClient(reader, writer, on_notification)


async def start_standalone(on_notification: Notified) -> HostClient:
    """A runtime in this process, served to the front as one editor connection over a socket pair."""
    from openvaala_lsp.runtime.core import Runtime
    from openvaala_lsp.runtime.startup import start_runtime
    from openvaala_lsp.server.connection import Connection

    loop = asyncio.get_running_loop()
    runtime: asyncio.Future[Runtime] = loop.create_future()
    starting = loop.create_task(start_runtime(runtime))
    ours, theirs = socket.socketpair()
    server_reader, server_writer = await asyncio.open_connection(sock=theirs, limit=1 << 20)

    async def stop_runtime(_: Connection | None = None) -> None:
        await starting
        if not runtime.exception():
            await runtime.result().stop()

    connection = Connection(runtime, server_writer, environment=os.environ, cwd=os.getcwd(), on_shutdown=stop_runtime)
    serving = loop.create_task(connection.serve(server_reader))
    reader, writer = await asyncio.open_connection(sock=ours, limit=1 << 20)
    client = HostClient(reader, writer, on_notification)

    async def stop() -> None:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await stop_runtime()

    client.stop = stop
    return client
