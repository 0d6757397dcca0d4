"""The package's LSP client, what an editor does: framed JSON-RPC requests and notifications over any
pair of asyncio streams (a spawned `openvaala-lsp`'s stdio, or the runtime host's socket). `openvaala
sql` and `openvaala demo` speak it, and so do the tests, through the same frame reader and writer as
the server (`framing`).

What the server sends is read strictly: a frame that is not valid UTF-8 JSON of an object (NaN
included) marks the client `broken`, and every wait fails with what the server sent. Notifications
are kept in arrival order; the server's requests are answered by `handlers` (an unknown one with
`methodNotFound`).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from openvaala_lsp.wire import framing

READ_SIZE = 65536
NULL = object()  # as params: send `"params": null` (None leaves the member out)


class ResponseError(Exception):
    """An error answer; `kind` and `problems` come from `data` (see schemas/README.md)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code: Any = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        errors = self.data.get("errors") if isinstance(self.data, dict) else None
        self.problems: list[str] = [str(e) for e in errors] if isinstance(errors, list) else []

    @property
    def kind(self) -> str | None:
        return self.data.get("kind") if isinstance(self.data, dict) else None


class ServerBroke(ConnectionError):
    """The server went away, or sent what is not an LSP frame of a JSON object."""


class NotificationLog:
    """Notifications in arrival order (`notifications`), waited for and picked out the same way by
    this client and by the tests' in-process runtime harness."""

    notifications: list[dict[str, Any]]
    _changed: asyncio.Condition

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first notification (received so far or later) matching `predicate`; bound the wait
        with `asyncio.timeout`."""
        return await self._first(self.notifications, predicate)

    def of(self, method: str, subscription_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]
            for m in self.notifications
            if m["method"] == method
            and (subscription_id is None or m["params"].get("subscriptionId") == subscription_id)
        ]

    async def _first(
        self, messages: list[dict[str, Any]], predicate: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        async with self._changed:
            while True:
                self._check()
                for message in messages:
                    if predicate(message):
                        return message
                await self._changed.wait()

    def _check(self) -> None:
        """Raises when no more messages can come (the client is broken)."""


class LspClient(NotificationLog):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.messages: list[dict[str, Any]] = []  # everything the server sent, in order
        self.notifications: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # every response, also those no request waits for
        self.requests_seen: list[dict[str, Any]] = []  # the server's requests to this client
        self.handlers: dict[str, Callable[[Any], Any]] = {"workspace/workspaceFolders": lambda params: None}
        self.broken: str | None = None
        self.initialized: Any = None  # the initialize result
        self._changed = asyncio.Condition()
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._reading = asyncio.Event()  # cleared: the client stops reading, like a stalled editor
        self._reading.set()
        self._reader_task = asyncio.get_running_loop().create_task(self._read())

    # Writing

    async def send_bytes(self, data: bytes) -> None:
        """Exactly these bytes, framing included."""
        self.writer.write(data)
        await self.writer.drain()

    async def send_raw(self, body: bytes) -> None:
        """`body` framed, whatever it holds."""
        await self.send_bytes(framing.frame_body(body))

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_bytes(framing.frame(message))

    async def send_request(self, method: str, params: Any = None) -> tuple[int, asyncio.Future[Any]]:
        """Sends a request without waiting: its id (for `$/cancelRequest`) and the future of its answer."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = None if params is NULL else params
        if self.broken is not None:
            future.set_exception(ServerBroke(self.broken))
        else:
            await self.send(message)
        return msg_id, future

    async def request(self, method: str, params: Any = None) -> Any:
        """The result; ResponseError for an error answer, ServerBroke if the server goes."""
        _, future = await self.send_request(method, params)
        return await future

    async def notify(self, method: str, params: Any = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self, params: dict[str, Any]) -> Any:
        result = await self.request("initialize", {"processId": os.getpid(), "capabilities": {}, **params})
        self.initialized = result
        await self.notify("initialized", {})
        return result

    async def shutdown(self) -> None:
        """`shutdown` then `exit`, as an editor leaves."""
        await self.request("shutdown", None)
        await self.notify("exit", None)

    # Reading

    async def response(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first response (received so far or later) matching `predicate`."""
        return await self._first(self.responses, predicate)

    async def incoming(self) -> AsyncIterator[dict[str, Any]]:
        """The notifications in arrival order, from the first on, as they come."""
        index = 0
        while True:
            async with self._changed:
                while index >= len(self.notifications):
                    self._check()
                    await self._changed.wait()
                arrived, index = self.notifications[index:], len(self.notifications)
            for message in arrived:
                yield message

    def pause_reading(self) -> None:
        """Stops reading the server's output between two messages (its pipe then fills up)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    async def _read(self) -> None:
        frames = framing.FrameReader()
        try:
            while True:
                await self._reading.wait()
                data = await self.reader.read(READ_SIZE)
                if not data:
                    raise ServerBroke("the server closed its output")
                for body in frames.feed(data):
                    if isinstance(body, framing.Refused):
                        raise ServerBroke(f"a frame that is no LSP frame: {body.message}")
                    await self._on_message(_message(body))
                    await self._reading.wait()
        except asyncio.CancelledError:
            self._broke("the client was closed")
            raise
        except (ServerBroke, ConnectionError) as exc:
            self._broke(str(exc))
        except Exception as exc:
            self._broke(f"{type(exc).__name__}: {exc}")

    def _broke(self, why: str) -> None:
        self.broken = why
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ServerBroke(why))
        self._pending.clear()
        asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _check(self) -> None:
        if self.broken is not None:
            raise ServerBroke(self.broken)

    async def _on_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if "method" in message and "id" in message:
            self.requests_seen.append(message)
            await self._answer(message)
        elif "method" in message:
            async with self._changed:
                self.notifications.append(message)
                self._changed.notify_all()
        else:
            async with self._changed:
                self.responses.append(message)
                self._changed.notify_all()
            self._settle(message)

    def _settle(self, response: dict[str, Any]) -> None:
        """The waiting request's future gets the response's result or error."""
        future = self._pending.pop(response.get("id"), None)
        if future is not None and not future.done():
            if "error" in response:
                future.set_exception(ResponseError(response["error"]))
            else:
                future.set_result(response.get("result"))

    async def _answer(self, request: dict[str, Any]) -> None:
        handler = self.handlers.get(request["method"])
        if handler is None:
            error = {"code": framing.METHOD_NOT_FOUND[1], "message": f"not handled: {request['method']}"}
            await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
            return
        result = handler(request.get("params"))
        if isinstance(result, Awaitable):
            result = await result
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def close(self) -> None:
        self._reader_task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, BrokenPipeError):
            pass


def _message(body: bytes) -> dict[str, Any]:
    """A frame's message, read strictly: UTF-8 JSON of an object, no NaN."""
    try:
        message = framing.decode(body)
    except (ValueError, RecursionError) as exc:
        raise ServerBroke(f"a frame that is not JSON ({exc}): {body[:200]!r}") from None
    if not isinstance(message, dict):
        raise ServerBroke(f"a message that is not an object: {body[:200]!r}")
    return message
