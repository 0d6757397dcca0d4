"""The frames the server writes (`peer.encode`, by orjson): the JSON `framing.frame` would write, valid
UTF-8 whatever a string holds, and a result with no JSON form answered as an internal error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openvaala_lsp.framing import FrameReader, frame
from openvaala_lsp.server.peer import Peer, encode


def body(data: bytes) -> Any:
    [message] = FrameReader().feed(data)
    assert isinstance(message, bytes)
    return json.loads(message.decode("utf-8"))  # strict UTF-8: a frame that is not fails here


MESSAGES = [
    {"jsonrpc": "2.0", "method": "openvaala/sessionEvent", "params": {"seq": 3, "events": [{"delta": "caf\u00e9"}]}},
    {"jsonrpc": "2.0", "id": "a", "result": {"text": '\u2028 "quoted"\n\ttab \x01 \U0001f600 </script>', "n": 1.5}},
    {"jsonrpc": "2.0", "id": 7, "result": {"empty": {}, "list": [None, True, False, 0, -1, 2**63 - 1]}},
]


@pytest.mark.parametrize("message", MESSAGES)
def test_the_json_framing_would_write(message: dict[str, Any]) -> None:
    assert body(encode(message)) == body(frame(message)) == message
    assert encode(message) == frame(message)  # byte for byte where no float differs in its digits


def test_what_orjson_refuses_goes_the_json_module_way() -> None:
    lone = {"jsonrpc": "2.0", "method": "m", "params": {"text": "half \ud83d of an emoji"}}
    assert body(encode(lone)) == lone  # \\u-escaped, so the frame stays valid UTF-8
    wide = {"jsonrpc": "2.0", "method": "m", "params": {"n": 2**70, 1: "key"}}
    assert body(encode(wide))["params"] == {"n": 2**70, "1": "key"}


def test_nan_goes_as_null() -> None:
    assert body(encode({"jsonrpc": "2.0", "method": "m", "params": {"x": float("nan")}}))["params"] == {"x": None}


def test_a_result_with_no_json_form_is_an_internal_error() -> None:
    written: list[bytes] = []

    class Sink:
        def write(self, data: bytes) -> None:
            written.append(data)

    Peer(Sink()).answer(1, {"value": object()})
    [answer] = [body(data) for data in written]
    assert answer["id"] == 1 and answer["error"]["data"]["kind"] == "internal"
    assert "could not be encoded" in answer["error"]["message"]
