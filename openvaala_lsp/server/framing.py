"""LSP base-protocol framing: reading `Content-Length` framed messages and building frames."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

MAX_HEADER_LINES = 32


class AsyncReader(Protocol):
    async def readline(self) -> bytes: ...

    async def readexactly(self, n: int) -> bytes: ...


class FramingError(Exception):
    """The byte stream is not LSP framing; the connection cannot continue."""


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_bodies(reader: AsyncReader) -> AsyncIterator[bytes]:
    """Message bodies until EOF. A peer that dies mid-frame ends the stream like EOF."""
    while True:
        length: int | None = None
        for _ in range(MAX_HEADER_LINES):
            try:
                line = await reader.readline()
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FramingError(f"bad Content-Length header: {line!r}") from None
        else:
            raise FramingError("too many header lines")
        if length is None or length < 0:
            raise FramingError("message without Content-Length")
        try:
            yield await reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
