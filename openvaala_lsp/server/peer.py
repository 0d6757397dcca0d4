"""JSON-RPC 2.0 between the server and one editor, over LSP frames: the requests the editor sent that
are in flight (each answered exactly once: its result, its error, or `requestCancelled`), the
requests the server sends the editor (`workspace/workspaceFolders`, `openvaala/callClientTool`)
and their answers, and notifications.

Messages arrive here already checked (`messages.check`). Every frame written is valid UTF-8 JSON
(`encode`); a result JSON cannot carry (an object of no JSON type) is answered as an internal error
instead.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from openvaala_lsp import compact_json
from openvaala_lsp.framing import INTERNAL, REQUEST_CANCELLED, frame_body
from openvaala_lsp.protocol.codes import KINDS

logger = logging.getLogger(__name__)

MAX_ERROR_MESSAGE = 1000


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...


class WireError(Exception):
    """An error as the wire carries it: code, message, data (whose `kind` names the error kind)."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data or {}

    @property
    def kind(self) -> str:
        return str(self.data.get("kind") or KINDS.get(self.code, "internal"))

    def response(self, msg_id: Any) -> dict[str, Any]:
        """The error as the wire promises it: `data.kind` always, the message bounded."""
        kind = self.data.get("kind")
        data = {**self.data, "kind": kind if isinstance(kind, str) else KINDS.get(self.code, "internal")}
        message = self.message
        if len(message) > MAX_ERROR_MESSAGE:
            message = message[:MAX_ERROR_MESSAGE] + f"… ({len(self.message)} characters)"
        return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": self.code, "message": message, "data": data}}


class Peer:
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._handling: dict[Any, asyncio.Task[None]] = {}  # the editor's requests in flight, by id
        self._asked: dict[str, asyncio.Future[Any]] = {}  # our requests waiting for an answer
        self._ids = itertools.count(1)
        self.closed = False

    # Out

    def send(self, message: dict[str, Any]) -> None:
        if not self.closed:
            self.sink.write(encode(message))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, msg_id: Any, result: Any) -> None:
        try:
            data = encode({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except (TypeError, ValueError) as exc:  # an object JSON has no form for
            logger.error("cannot encode a result as JSON: %s", exc)
            self.fail(msg_id, WireError(INTERNAL[1], f"the result could not be encoded as JSON: {exc}"))
            return
        if not self.closed:
            self.sink.write(data)

    def fail(self, msg_id: Any, error: WireError) -> None:
        self.send(error.response(msg_id))

    async def request(self, method: str, params: Any) -> Any:
        """The editor's result; WireError for its error answer; CancelledError when it goes away."""
        msg_id = f"openvaala-{next(self._ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asked[msg_id] = answer
        try:
            self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await answer
        finally:
            self._asked.pop(msg_id, None)

    # In

    def answered(self, message: dict[str, Any]) -> None:
        """The editor's answer to one of our requests; one nobody waits for any more is dropped."""
        waiter = self._asked.get(message["id"]) if isinstance(message["id"], str) else None
        if waiter is None or waiter.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            data = error.get("data")
            waiter.set_exception(
                WireError(
                    code if isinstance(code, int) else INTERNAL[1],
                    str(error.get("message", "")),
                    data if isinstance(data, dict) else None,
                )
            )
        else:
            waiter.set_result(message.get("result"))

    def handle(self, msg_id: Any, work: Coroutine[Any, Any, Any]) -> None:
        """Runs a request's handler; its return value is the result, an WireError the error."""
        task = asyncio.get_running_loop().create_task(self._respond(msg_id, work))
        self._handling[msg_id] = task
        task.add_done_callback(lambda done: self._finished(msg_id, done))

    async def _respond(self, msg_id: Any, work: Coroutine[Any, Any, Any]) -> None:
        try:
            result = await work
        except WireError as exc:
            self.fail(msg_id, exc)
        except Exception:
            logger.exception("request %r failed", msg_id)
            self.fail(msg_id, WireError(INTERNAL[1], "internal error", {"kind": INTERNAL[0]}))
        else:
            self.answer(msg_id, result)

    def _finished(self, msg_id: Any, task: asyncio.Task[None]) -> None:
        if self._handling.get(msg_id) is task:
            del self._handling[msg_id]
        if task.cancelled():  # also when cancelled before it ever ran: it is answered all the same
            self.fail(
                msg_id, WireError(REQUEST_CANCELLED[1], "the request was cancelled", {"kind": REQUEST_CANCELLED[0]})
            )

    def cancel(self, msg_id: Any) -> None:
        """`$/cancelRequest`: the request answers `requestCancelled` unless it already answered."""
        task = self._handling.get(msg_id)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        """The editor went away: stop its requests and give up on ours."""
        self.closed = True
        for task in list(self._handling.values()):
            task.cancel()
        for waiter in list(self._asked.values()):
            waiter.cancel()


def error(kind_and_code: tuple[str, int], message: str, **data: Any) -> WireError:
    kind, code = kind_and_code
    return WireError(code, message, {"kind": kind, **data})


def encode(message: dict[str, Any]) -> bytes:
    """One LSP frame of `message` (`compact_json`: by orjson, refused with TypeError if it has no
    JSON form)."""
    return frame_body(compact_json.dumps(message))
