"""pygls protocol subclass: the LSP lifecycle as openvaala needs it (pinned to pygls 2.1.1).

- `initialize` advertises the protocol in `capabilities.experimental.openvaala`.
- After `shutdown`, requests are answered with `runtimeStopped` instead of being dropped.
- `exit` ends this connection only; the process decides what else stops.
- Message types are cached per method, not per protocol instance (pygls' lru_cache pins
  closed sessions in memory).
- Domain errors are answered without pygls' traceback logging.
- Every error response carries `data.kind`, a bounded message and never a traceback; frames are
  built by `framing.frame` (valid UTF-8 JSON, no NaN).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Generator
from concurrent.futures import Future
from typing import Any

from lsprotocol import types
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.protocol import LanguageServerProtocol, default_converter, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    RPCRequest,
)

from openvaala_lsp import __version__, framing
from openvaala_lsp.protocol import PROTOCOL_VERSION
from openvaala_lsp.protocol.codes import CODES, KINDS
from openvaala_lsp.protocol.errors import RuntimeStopped
from openvaala_lsp.protocol.methods import NOTIFICATIONS
from openvaala_lsp.tools import sandbox

logger = logging.getLogger(__name__)


class RpcError(JsonRpcException):
    """A domain error answered as-is: `data.kind` names the error kind."""


def runtime_stopped_error() -> RpcError:
    return RpcError(RuntimeStopped.default_message, CODES[RuntimeStopped.kind], {"kind": RuntimeStopped.kind})


def converter_factory() -> Any:
    """pygls' converter for LSP types, keeping params/results of our custom methods as plain JSON
    (pygls would turn them into namedtuples); our own converter structures them in the handler."""
    converter = default_converter()  # type: ignore[no-untyped-call]
    for message_type in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(message_type, lambda obj, cls: cls(**obj))
    return converter


_CONVERTER = converter_factory()


def shared_converter() -> Any:
    # one converter for every connection: building hooks costs milliseconds per converter
    return _CONVERTER


@functools.cache
def _message_type(method: str) -> Any:
    return types.METHOD_TO_TYPES.get(method, (None,))[0]


@functools.cache
def _result_type(method: str) -> Any:
    return types.METHOD_TO_TYPES.get(method, (None, None))[1]


def _sandbox() -> dict[str, Any]:
    """Whether shell commands can run sandboxed here (the runtime probes it as it starts)."""
    state = sandbox.state()
    return {"usable": state.usable, "reason": state.reason}


class OpenvaalaProtocol(LanguageServerProtocol):
    methods: list[str] = []  # the requests this server answers, set by the connection

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]
        return _message_type(method)

    def get_result_type(self, method: str) -> Any:  # type: ignore[override]
        return _result_type(method)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        result.capabilities.text_document_sync = None
        result.capabilities.experimental = {
            "openvaala": {
                "protocolVersion": PROTOCOL_VERSION,
                "serverVersion": __version__,
                "methods": sorted(self.methods),
                "notifications": sorted(NOTIFICATIONS),
                "sandbox": _sandbox(),
            }
        }
        return result

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.EXIT)) is not None:
            yield handler, args, None

    def handle_message(self, message: Any) -> None:
        if self._shutdown and isinstance(message, RPCRequest) and message.method != types.EXIT:
            self._send_response(message.id, error=runtime_stopped_error().to_response_error())
            return
        super().handle_message(message)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        if not future.cancelled() and isinstance(error := future.exception(), RpcError):
            self._request_futures.pop(msg_id, None)
            self._send_response(msg_id, error=error.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: ResponseError | None = None) -> None:
        super()._send_response(msg_id, result, None if error is None else clean_error(error))

    def _send_data(self, data: Any) -> None:
        if not data or self.writer is None:
            return
        try:
            payload = framing.frame(data, default=self._serialize_message)
        except (TypeError, ValueError) as exc:  # e.g. a float NaN in a result
            logger.error("cannot encode a message as JSON: %s", exc)
            if not isinstance(data, (JsonRPCResponseMessage, ResponseErrorMessage)):
                return
            reason = f"the result could not be encoded as JSON: {exc}"
            payload = framing.frame(framing.error_response(data.id, framing.INTERNAL, reason))
        self.writer.write(payload)

    def _handle_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        # a reply to a server->client request whose waiter was cancelled (pygls #621)
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)


MAX_ERROR_MESSAGE = 1000


def clean_error(error: ResponseError) -> ResponseError:
    """The error as the wire promises it: `data.kind` always, the message bounded, no traceback
    (pygls puts one in `data` for an unexpected exception)."""
    data = error.data if isinstance(error.data, dict) else {}
    kind = data.get("kind")
    if not isinstance(kind, str):
        kind = KINDS.get(error.code, "internal")
    data = {key: value for key, value in data.items() if key != "traceback"}
    data["kind"] = kind
    message = error.message
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[:MAX_ERROR_MESSAGE] + f"… ({len(error.message)} characters)"
    return ResponseError(code=error.code, message=message, data=data)


__all__ = ["JsonRpcRequestCancelled", "OpenvaalaProtocol", "RpcError", "shared_converter"]
