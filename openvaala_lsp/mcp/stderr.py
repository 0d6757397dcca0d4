"""A stdio server's stderr: a pipe of our own, forwarded line by line to logging.

Our stdout is the editor protocol and our stderr may be the user's terminal, so a server's
diagnostics go to the log instead. The last lines are kept to explain a failure.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from typing import IO, TextIO

logger = logging.getLogger("openvaala_lsp.mcp.server")

TAIL_LINES = 20
MAX_LINE = 1000
"""Characters kept of one line; a server printing binary garbage cannot grow memory."""


class _Reader(asyncio.Protocol):
    def __init__(self, owner: StderrPipe) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner._feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._finish()


class StderrPipe:
    def __init__(self, server: str) -> None:
        self._server = server
        read_fd, write_fd = os.pipe()
        self._read_file: IO[bytes] | None = os.fdopen(read_fd, "rb", buffering=0)
        self.writer: TextIO = open(write_fd, "w")  # closed once the child has its copy
        self._partial = b""
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._eof = asyncio.Event()
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        assert self._read_file is not None
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(lambda: _Reader(self), self._read_file)
        self._read_file = None  # the transport owns it now

    def close_writer(self) -> None:
        """Drops our copy of the write end once the child has its own, so end of file can come."""
        with contextlib.suppress(OSError):
            self.writer.close()

    async def settle(self, seconds: float) -> None:
        """Gives an exited server's last words a moment to arrive (they explain the failure)."""
        self.close_writer()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._eof.wait()

    def tail(self) -> str:
        lines = list(self._tail)
        if self._partial:
            lines.append(self._decode(self._partial))
        return "\n".join(lines)

    def close(self) -> None:
        self.close_writer()
        if self._transport is not None:
            self._transport.close()
        if self._read_file is not None:
            self._read_file.close()

    def _feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._line(self._decode(line))
        if len(self._partial) > MAX_LINE * 4:
            self._line(self._decode(self._partial))
            self._partial = b""

    def _finish(self) -> None:
        if self._partial:
            self._line(self._decode(self._partial))
            self._partial = b""
        self._eof.set()

    def _line(self, line: str) -> None:
        if line.strip():
            self._tail.append(line)
            logger.info("[%s] %s", self._server, line)

    @staticmethod
    def _decode(data: bytes) -> str:
        return data[: MAX_LINE * 4].decode("utf-8", "replace").rstrip("\r")[:MAX_LINE]
