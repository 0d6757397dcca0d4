"""Standalone mode: the runtime in the editor's process, one connection over stdin/stdout."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import stat
import sys
from typing import Any, BinaryIO

from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.startup import start_runtime
from openvaala_lsp.server.connection import Connection

logger = logging.getLogger(__name__)


class _ThreadReader:
    """For stdin that asyncio cannot watch (a regular file): blocking reads in a worker thread."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    async def read(self, n: int) -> bytes:
        return await asyncio.to_thread(self._stream.read, n)


class _BlockingTransport(asyncio.WriteTransport):
    """For stdout that asyncio cannot watch (a regular file)."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self._stream = stream
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._stream.write(data)
        self._stream.flush()

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True
        self._stream.close()

    def get_write_buffer_size(self) -> int:
        return 0


async def open_stdio() -> tuple[Any, asyncio.StreamWriter]:
    """Async reader and writer over fds 0 and 1. Afterwards fd 1 points at stderr, so a stray
    print can never corrupt the protocol stream."""
    loop = asyncio.get_running_loop()
    if _same_socket(0, 1):
        # one socket for both directions (a socketpair end handed as stdin and stdout): a pipe
        # transport on each would see the other direction's traffic
        sock = socket.socket(fileno=os.dup(0))
        os.dup2(2, 1)
        return await asyncio.open_connection(sock=sock, limit=1 << 20)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    stdout = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    reader: Any
    try:
        stream_reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream_reader), stdin)
        reader = stream_reader
    except ValueError:
        reader = _ThreadReader(stdin)
    protocol: Any
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    except ValueError:
        transport, protocol = _BlockingTransport(stdout), asyncio.streams.FlowControlMixin()
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _same_socket(a: int, b: int) -> bool:
    try:
        first, second = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return stat.S_ISSOCK(first.st_mode) and os.path.samestat(first, second)


async def run() -> int:
    loop = asyncio.get_running_loop()
    reader, writer = await open_stdio()
    runtime: asyncio.Future[Runtime] = loop.create_future()
    # the database opens while the editor's initialize is answered
    starting = loop.create_task(start_runtime(runtime))

    async def stop_runtime(_: Connection | None = None) -> None:
        await starting
        if not runtime.exception():
            await runtime.result().stop()

    connection = Connection(runtime, writer, environment=os.environ, cwd=os.getcwd(), on_shutdown=stop_runtime)
    serving = loop.create_task(connection.serve(reader))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    try:
        await serving
    except asyncio.CancelledError:
        pass
    finally:
        await stop_runtime()
    return connection.exit_code


def main() -> int:
    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stderr.flush()
