"""ACP's wire, newline-delimited JSON-RPC, held to what the LSP-framed wire promises (PROTOCOL.md
section 5): every error carries `data.kind`; a line that is no JSON, a message that is no object, a
bad id or method, a line over the message limit, or one request too many in flight is answered with
an error instead of being dropped or crashing the SDK's connection, which trusts what it reads.

It is the SDK's message-level `Transport`: `acp.Connection` runs on top of it unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from openvaala_lsp.protocol.codes import CODES, KINDS
from openvaala_lsp.wire import framing

MAX_IN_FLIGHT = 256  # as on the LSP-framed wire: one more is answered `overloaded`
MAX_MESSAGE = 1000  # an error message's characters, as on the LSP-framed wire
MAX_PROBLEMS = 20


def _error(msg_id: Any, kind: str, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": CODES[kind], "message": message, "data": {"kind": kind}}}


def _with_kind(error: Any) -> dict[str, Any]:
    """The SDK's error object with `data.kind` (from the code) and data that is surely JSON."""
    if not isinstance(error, dict):
        error = {"code": CODES["internal"], "message": str(error)}
    code = error.get("code")
    data = error.get("data")
    data = dict(data) if isinstance(data, dict) else ({} if data is None else {"details": data})
    data.setdefault("kind", KINDS.get(code, "internal") if isinstance(code, int) else "internal")
    if isinstance(problems := data.get("errors"), list):
        # pydantic's validation errors: where and what, never the value sent (it may be huge) nor
        # `ctx` (it may hold exceptions) nor its documentation links
        data["errors"] = [
            {k: v for k, v in p.items() if k in ("type", "loc", "msg")} if isinstance(p, dict) else str(p)
            for p in problems[:MAX_PROBLEMS]
        ]
    data = json.loads(json.dumps(data, default=str))
    return {
        "code": code if isinstance(code, int) else CODES["internal"],
        "message": str(error.get("message")),
        "data": data,
    }


def _good_id(msg_id: Any) -> bool:
    return isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))


class NdjsonWire:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader  # made with `limit=framing.max_message_bytes()`: a longer line is refused
        self._writer = writer
        self._limit = framing.max_message_bytes()
        self._lock = asyncio.Lock()
        self._in_flight: set[Any] = set()  # ids of the client's requests not answered yet
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if "error" in message:
            message = {**message, "error": _with_kind(message["error"])}
        if "method" not in message and ("result" in message or "error" in message):
            self._in_flight.discard(_key(message.get("id")))
        await self._write(message)

    async def _write(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        # a lone surrogate the editor sent, echoed back, is no UTF-8: replaced, never a lost answer
        data = text.encode("utf-8", "replace") + b"\n"
        async with self._lock:
            if self._closed:
                raise ConnectionError("the editor's connection is closed")
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                return None
            if not line.strip():
                continue
            message = await self._check(line)
            if message is not None:
                return message

    async def _check(self, line: bytes) -> dict[str, Any] | None:
        """The message when it is one the SDK can take, else None once the editor was answered."""
        try:
            message = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            await self._write(_error(None, "parseError", f"not JSON: {str(exc)[:200]}"))
            return None
        if isinstance(message, list):
            await self._write(_error(None, "invalidRequest", "a batch: ACP has none"))
            return None
        if not isinstance(message, dict):
            await self._write(_error(None, "invalidRequest", "a message must be a JSON object"))
            return None
        has_id, method = "id" in message, message.get("method")
        msg_id = message.get("id")
        if "method" in message and not isinstance(method, str):
            await self._write(_error(msg_id if _good_id(msg_id) else None, "invalidRequest", "method must be a string"))
            return None
        if has_id and not _good_id(msg_id) and not (msg_id is None and method is None):
            await self._write(_error(None, "invalidRequest", "an id is a string or an integer"))
            return None
        if method is None:
            # a response: to a request of ours only if its id is one the SDK could have used
            return message if has_id and ("result" in message or "error" in message) and _good_id(msg_id) else None
        if "params" in message and not isinstance(message["params"], (dict, type(None))):
            if has_id:
                await self._write(_error(msg_id, "invalidParams", "params must be an object"))
            return None
        if has_id:
            if _key(msg_id) in self._in_flight:
                await self._write(_error(msg_id, "invalidRequest", "this id is already in flight"))
                return None
            if len(self._in_flight) >= MAX_IN_FLIGHT:
                await self._write(_error(msg_id, "overloaded", f"over {MAX_IN_FLIGHT} requests in flight"))
                return None
            self._in_flight.add(_key(msg_id))
        return message

    async def _line(self) -> bytes | None:
        """One line, or None at the end; a line over the limit is answered and skipped unread."""
        while True:
            try:
                return await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return exc.partial or None
            except asyncio.LimitOverrunError:  # the reader's limit is the message limit
                await self._skip_line()
                await self._write(_error(None, "messageTooLarge", f"a message over {self._limit} bytes"))

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def close(self) -> None:
        self._closed = True
        self._writer.close()


def _key(msg_id: Any) -> Any:
    return (type(msg_id).__name__, msg_id)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
