"""The frames a connection writes (pygls' protocol with our `_send_data`: `framing.frame_body` over
orjson): the JSON `framing.frame` would write, valid UTF-8 whatever a string holds, and a result with
no JSON form answered as an internal error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.server.connection import Connection
from openvaala_lsp.wire.framing import FrameReader, frame


def body(data: bytes) -> Any:
    [message] = FrameReader().feed(data)
    assert isinstance(message, bytes)
    return json.loads(message.decode("utf-8"))  # strict UTF-8: a frame that is not fails here


class Sink:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return False


@pytest.fixture
async def connection() -> tuple[Connection, Sink]:
    sink = Sink()
    runtime: asyncio.Future[Runtime] = asyncio.get_running_loop().create_future()
    made = Connection(runtime, sink, environment={}, cwd="/")  # type: ignore[arg-type]
    return made, sink


MESSAGES = [
    ("openvaala/sessionEvent", {"seq": 3, "events": [{"delta": "caf\u00e9"}]}),
    ("openvaala/x", {"text": '\u2028 "quoted"\n\ttab \x01 \U0001f600 </script>', "n": 1.5}),
    ("openvaala/y", {"empty": {}, "list": [None, True, False, 0, -1, 2**63 - 1]}),
]


@pytest.mark.parametrize(("method", "params"), MESSAGES)
async def test_the_json_framing_would_write(connection: tuple[Connection, Sink], method: str, params: Any) -> None:
    server, sink = connection
    server.protocol.notify(method, params)
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    [written] = sink.written
    assert body(written) == body(frame(message)) == message
    assert written == frame(message)  # byte for byte where no float differs in its digits


async def test_what_orjson_refuses_goes_the_json_module_way(connection: tuple[Connection, Sink]) -> None:
    server, sink = connection
    server.protocol.notify("m", {"text": "half \ud83d of an emoji"})
    server.protocol.notify("m", {"n": 2**70, 1: "key"})
    lone, wide = (body(data) for data in sink.written)
    assert lone["params"] == {"text": "half \ud83d of an emoji"}  # \\u-escaped, so the frame stays valid UTF-8
    assert wide["params"] == {"n": 2**70, "1": "key"}


async def test_nan_goes_as_null(connection: tuple[Connection, Sink]) -> None:
    server, sink = connection
    server.protocol.notify("m", {"x": float("nan")})
    assert body(sink.written[0])["params"] == {"x": None}


async def test_a_result_with_no_json_form_is_an_internal_error(connection: tuple[Connection, Sink]) -> None:
    server, sink = connection
    server.protocol._send_response(1, result={"value": object()})
    [answer] = [body(data) for data in sink.written]
    assert answer["id"] == 1 and answer["error"]["data"]["kind"] == "internal"
    assert "could not be encoded" in answer["error"]["message"]
