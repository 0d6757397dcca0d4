"""A minimal LSP client, what an editor does: framed JSON-RPC requests and notifications over any pair
of asyncio streams (a spawned `openvaala-lsp`'s stdio, or the runtime host's socket)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any


class PeerError(Exception):
    """An error response; `kind` and `problems` come from `data` (see schemas/README.md)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")))
        self.code: Any = error.get("code")
        data = error.get("data")
        self.kind: str | None = data.get("kind") if isinstance(data, dict) else None
        errors = data.get("errors") if isinstance(data, dict) else None
        self.problems: list[str] = [str(e) for e in errors] if isinstance(errors, list) else []


class LspPeer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = reader
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reading = asyncio.get_running_loop().create_task(self._read_all())

    async def initialize(self, params: dict[str, Any]) -> Any:
        result = await self.request("initialize", {"processId": os.getpid(), "capabilities": {}, **params})
        await self.notify("initialized", {})
        return result

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        await self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return await future

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def shutdown(self) -> None:
        """`shutdown` then `exit`, as an editor leaves."""
        await self.request("shutdown", None)
        await self.notify("exit", None)

    async def close(self) -> None:
        self._reading.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, BrokenPipeError):
            pass

    async def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await self.writer.drain()

    async def _read_all(self) -> None:
        try:
            while (message := await self._read_one()) is not None:
                if "method" in message:
                    await self.notifications.put(message)
                    continue
                future = self._waiting.pop(message["id"], None) if message.get("id") in self._waiting else None
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(PeerError(message["error"]))
                else:
                    future.set_result(message.get("result"))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass  # cut off mid-message, or not LSP: what is waiting fails below
        finally:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(ConnectionError("openvaala-lsp went away"))

    async def _read_one(self) -> dict[str, Any] | None:
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if not length:
            return None
        message: dict[str, Any] = json.loads(await self._reader.readexactly(length))
        return message
