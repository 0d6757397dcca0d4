"""pygls' LanguageServerProtocol as an openvaala connection needs it: the cases pygls 2.1.1 gets wrong
for this server, fixed here and nowhere else.

- Every error response carries `data.kind`, a bounded message and never a traceback (pygls puts one
  in `data` for an unexpected exception, and logs one for every deliberate error).
- After `shutdown`, a request is answered `runtimeStopped` (pygls drops it unanswered: the editor
  would wait for ever).
- `exit` ends this connection only (pygls calls `sys.exit`: the runtime host serves other editors).
- A reply to a server->client request whose waiter was cancelled is dropped (pygls #621: it raised
  inside the read loop; fixed upstream after 2.1.1).
- Requests in flight are limited per connection; one more is answered `overloaded`.
- Frames are written by `framing.frame_body` over orjson (`compact_json`): the one framing of the
  package, valid UTF-8 JSON whatever a string holds; a result with no JSON form is answered as an
  internal error instead of being lost.
- Message types are looked up per method once per process (pygls caches them per protocol instance,
  which pins every closed connection in memory).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Generator
from concurrent.futures import Future
from typing import Any

import cattrs
from lsprotocol import types
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol, default_converter, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, RPCRequest

from openvaala_lsp import __version__
from openvaala_lsp.checkpoints import git as checkpoints_git
from openvaala_lsp.protocol import PROTOCOL_VERSION
from openvaala_lsp.protocol.codes import CODES, KINDS
from openvaala_lsp.protocol.errors import Overloaded, RuntimeStopped
from openvaala_lsp.protocol.methods import NOTIFICATIONS
from openvaala_lsp.tools import sandbox
from openvaala_lsp.wire import compact_json, framing

logger = logging.getLogger(__name__)

MAX_ERROR_MESSAGE = 1000
MAX_IN_FLIGHT = 256  # an editor's requests not answered yet; far beyond what one sends at once


class WireError(JsonRpcException):
    """An error as the wire carries it: code, message, data (whose `kind` names the error kind)."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message, code, data or {})
        self.code: int = code
        self.message: str = message
        self.data: dict[str, Any] = data or {}

    @property
    def kind(self) -> str:
        return str(self.data.get("kind") or KINDS.get(self.code, "internal"))


def error(kind_and_code: tuple[str, int], message: str, **data: Any) -> WireError:
    kind, code = kind_and_code
    return WireError(code, message, {"kind": kind, **data})


def runtime_stopped() -> WireError:
    return WireError(CODES[RuntimeStopped.kind], RuntimeStopped.default_message, {"kind": RuntimeStopped.kind})


# JSON-RPC messages of methods lsprotocol does not know (ours): params and results stay plain JSON, which
# our own converter structures in the handler (pygls would make namedtuples of them)
_GENERIC = {
    JsonRPCRequestMessage: ("id", "method", "jsonrpc", "params"),
    JsonRPCNotification: ("method", "jsonrpc", "params"),
    JsonRPCResponseMessage: ("id", "jsonrpc", "result"),
}


def _generic_hook(obj: dict[str, Any], cls: type) -> Any:
    return cls(**{name: obj.get(name) for name in _GENERIC[cls]})


@functools.cache
def shared_converter() -> cattrs.Converter:
    """pygls' converter for LSP types, one for every connection (building one takes milliseconds)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for message_type in _GENERIC:
        converter.register_structure_hook(message_type, _generic_hook)
    return converter


@functools.cache
def _message_type(method: str) -> Any:
    return types.METHOD_TO_TYPES.get(method, (None,))[0]


@functools.cache
def _result_type(method: str) -> Any:
    return types.METHOD_TO_TYPES.get(method, (None, None))[1]


def clean_error(error: ResponseError) -> ResponseError:
    """The error as the wire promises it: `data.kind` always, the message bounded, no traceback."""
    data = error.data if isinstance(error.data, dict) else {}
    kind = data.get("kind")
    data = {key: value for key, value in data.items() if key != "traceback"}
    data["kind"] = kind if isinstance(kind, str) else KINDS.get(error.code, "internal")
    message = error.message
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[:MAX_ERROR_MESSAGE] + f"… ({len(error.message)} characters)"
    return ResponseError(code=error.code, message=message, data=data)


class OpenvaalaProtocol(LanguageServerProtocol):
    methods: tuple[str, ...] = ()  # the openvaala requests this connection answers (set by it)

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self._incoming: set[Any] = set()  # ids of the editor's requests not answered yet

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]
        return _message_type(method)

    def get_result_type(self, method: str) -> Any:  # type: ignore[override]
        return _result_type(method)

    # The lifecycle

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        state = sandbox.state()  # probed once per process: the first initialize waits for it
        git_state = checkpoints_git.state()  # `git --version`, once per process
        result.capabilities.experimental = {
            "openvaala": {
                "protocolVersion": PROTOCOL_VERSION,
                "serverVersion": __version__,
                "methods": sorted(self.methods),
                "notifications": sorted(NOTIFICATIONS),
                "sandbox": {"usable": state.usable, "reason": state.reason},
                "checkpoints": {"usable": git_state.usable, "reason": git_state.reason},
            }
        }
        return result

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.EXIT)) is not None:
            yield handler, args, None

    def handle_message(self, message: Any) -> None:
        if self._shutdown and isinstance(message, RPCRequest) and message.method != types.EXIT:
            self._send_response(message.id, error=runtime_stopped().to_response_error())
            return
        super().handle_message(message)

    # Requests in, answers out

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        if len(self._incoming) >= MAX_IN_FLIGHT:
            message = f"{MAX_IN_FLIGHT} requests of this connection are not answered yet: retry later"
            overloaded = error((Overloaded.kind, CODES[Overloaded.kind]), message)
            self._send_response(msg_id, error=overloaded.to_response_error())
            return
        self._incoming.add(msg_id)
        super()._handle_request(msg_id, method_name, params)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        self._incoming.discard(msg_id)
        if not future.cancelled() and isinstance(exc := future.exception(), WireError):
            self._request_futures.pop(msg_id, None)  # a deliberate answer: no traceback in the log
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: ResponseError | None = None) -> None:
        if error is not None and msg_id in self._incoming:
            self._incoming.discard(msg_id)  # answered before its handler ran (method not found)
        super()._send_response(msg_id, result, None if error is None else clean_error(error))

    def _handle_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():  # its waiter was cancelled (pygls #621)
            self._request_futures.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)

    def close(self) -> None:
        """The editor went away: its requests stop, and ours wait no more."""
        for future in list(self._request_futures.values()):
            future.cancel()
        self._request_futures.clear()
        self._incoming.clear()

    # Writing

    def _send_data(self, data: Any) -> None:
        if not data or self.writer is None:
            return
        try:
            body = compact_json.dumps(self._wire(data))
        except (TypeError, ValueError) as exc:  # an object JSON has no form for
            logger.error("cannot encode a message as JSON: %s", exc)
            if not isinstance(data, (JsonRPCResponseMessage, ResponseErrorMessage)):
                return
            reason = f"the result could not be encoded as JSON: {exc}"
            body = compact_json.dumps(framing.error_response(data.id, framing.INTERNAL, reason))
        self.writer.write(framing.frame_body(body))

    def _wire(self, data: Any) -> Any:
        """A message as wire JSON: ours carry it already; lsprotocol's go through the converter."""
        if type(data) is JsonRPCNotification:
            return {"jsonrpc": "2.0", "method": data.method, "params": self._value(data.params)}
        if type(data) is JsonRPCResponseMessage:
            return {"jsonrpc": "2.0", "id": data.id, "result": self._value(data.result)}
        if type(data) is JsonRPCRequestMessage:
            return {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": self._value(data.params)}
        return self._converter.unstructure(data)

    def _value(self, value: Any) -> Any:
        """Our params and results are wire JSON objects already; an LSP handler's (attrs, or lists of
        them) are unstructured."""
        return value if value is None or isinstance(value, dict) else self._converter.unstructure(value)
