"""A small LSP client for end-to-end tests: spawns the real `openvaala-lsp` and speaks
Content-Length framed JSON-RPC over its stdio.

Notifications are kept in arrival order; server->client requests are answered by `handlers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from notification_log import TIMEOUT, NotificationLog

NULL = object()  # as params: send `"params": null` (None leaves the member out)


class ResponseError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code: int = error["code"]
        self.message: str = error.get("message", "")
        self.data: Any = error.get("data")

    @property
    def kind(self) -> str | None:
        return self.data.get("kind") if isinstance(self.data, dict) else None


class LspClient(NotificationLog):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        self.requests_seen: list[dict[str, Any]] = []  # the server's requests to this client
        self.initialized: Any = None  # the initialize result  # every response, also those no request waits for
        self._notified = asyncio.Condition()
        self.handlers: dict[str, Callable[[Any], Any]] = {
            "workspace/workspaceFolders": lambda params: None,
        }
        self._reading = asyncio.Event()  # cleared: the client stops reading, like a stalled editor
        self._reading.set()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def spawn(
        cls, home: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None, args: list[str] | None = None
    ) -> LspClient:
        # each test has its own home, so its own runtime host: let it exit soon after the test
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **(env or {})}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "openvaala_lsp",
            *(args or []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(cwd) if cwd else None,
            env=environment,
        )
        return cls(process)

    async def send_raw(self, body: bytes) -> None:
        await self.send_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def send_bytes(self, data: bytes) -> None:
        """Exactly these bytes on the server's stdin, framing included."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def response(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = TIMEOUT) -> Any:
        """The first response (received so far or later) matching `predicate`."""
        async with self._notified:
            async with asyncio.timeout(timeout):
                while True:
                    for message in self.responses:
                        if predicate(message):
                            return message
                    await self._notified.wait()

    async def _send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode())

    async def request(self, method: str, params: Any = None, *, timeout: float = TIMEOUT) -> Any:
        _, future = await self.send_request(method, params)
        return await asyncio.wait_for(future, timeout)

    async def send_request(self, method: str, params: Any = None) -> tuple[int, asyncio.Future[Any]]:
        """Sends a request without waiting: its id (for `$/cancelRequest`) and the future of its answer."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = None if params is NULL else params
        await self._send(message)
        return msg_id, future

    async def call(self, name: str, params: Any = None, **kwargs: Any) -> Any:
        """`openvaala/<name>`."""
        return await self.request("openvaala/" + name, {} if params is None else params, **kwargs)

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(
        self,
        folders: list[Path] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        root: Path | None = None,
    ) -> Any:
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "capabilities": capabilities or {},
            "initializationOptions": {"openvaala": options or {}},
        }
        if folders is not None:
            params["workspaceFolders"] = [{"uri": f.as_uri(), "name": f.name} for f in folders]
        if root is not None:
            params["rootUri"] = root.as_uri()
        result = await self.request("initialize", params)
        self.initialized = result
        await self.notify("initialized", {})
        return result

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            await self._reading.wait()
            length = None
            while True:
                line = await stdout.readline()
                if not line:
                    self._fail_pending()
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            # strict JSON: NaN or Infinity from the server would be a bug
            message = json.loads(await stdout.readexactly(length), parse_constant=_not_json)
            await self._on_message(message)

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("server exited"))

    async def _on_message(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.requests_seen.append(message)
            handler = self.handlers.get(message["method"])
            if handler is None:
                await self._send(
                    {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not handled"}}
                )
            else:
                result = handler(message.get("params"))
                if asyncio.iscoroutine(result):
                    result = await result
                await self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif "method" in message:
            async with self._notified:
                self.notifications.append(message)
                self._notified.notify_all()
        else:
            async with self._notified:
                self.responses.append(message)
                self._notified.notify_all()
            future = self._pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(ResponseError(message["error"]))
                else:
                    future.set_result(message.get("result"))

    async def shutdown(self) -> int:
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, timeout=10)
            await self.notify("exit", None)
        return await self.close()

    async def close(self) -> int:
        if self.process.stdin and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), 15)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()
        finally:
            self._reader.cancel()

    def pause_reading(self) -> None:
        """Stops reading the server's output between two messages (its pipe then fills up)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def kill(self) -> None:
        self.process.kill()


def _not_json(name: str) -> None:
    raise ValueError(f"the server sent {name}, which is not JSON")


@contextlib.asynccontextmanager
async def running(home: Path, folder: Path, **kwargs: Any) -> AsyncIterator[LspClient]:
    client = await LspClient.spawn(home, cwd=folder, **kwargs)
    try:
        await client.initialize([folder])
        yield client
    finally:
        await client.shutdown()
