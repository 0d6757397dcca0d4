"""test_hostile_input.py's promises on the ACP wire (`openvaala-lsp --acp`), in both modes (an LSP
client of the runtime host, and --standalone): every bad line gets an error with `data.kind` and no
traceback (or, a notification, nothing), nothing takes the process down, and it keeps serving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_wire import AcpWire

MODES = ["front", "standalone"]
LIMIT = 1 << 20


@pytest.fixture(params=MODES)
def wire(request: pytest.FixtureRequest, home: Path, workspace: Path) -> Iterator[AcpWire]:
    args = ["--standalone"] if request.param == "standalone" else []
    client = AcpWire(home, workspace, args=args, env={"OPENVAALA_MAX_MESSAGE_BYTES": str(LIMIT)})
    assert "result" in client.request("initialize", {"protocolVersion": 1})
    yield client
    client.close()


def kind_of(answer: dict[str, Any]) -> tuple[int, str]:
    error = answer["error"]
    assert "Traceback" not in json.dumps(error)
    return error["code"], error["data"]["kind"]


def still_serving(wire: AcpWire) -> None:
    assert wire.process.poll() is None
    assert wire.request("initialize", {"protocolVersion": 1})["result"]["protocolVersion"] == 1


def test_lines_that_are_no_json_object_get_errors_with_a_kind(wire: AcpWire) -> None:
    for line, kind in [
        (b"{not json", "parseError"),
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":NaN}}', "parseError"),
        (b"[1, 2]", "invalidRequest"),
        (b'"a string"', "invalidRequest"),
        (b"\xff\xfe\x00", "parseError"),
        (b"[" * 100_000 + b"]" * 100_000, "parseError"),
    ]:
        wire.send_bytes(line + b"\n")
        answer = wire.answer(None)
        assert kind_of(answer)[1] == kind, line[:40]
    still_serving(wire)


def test_bad_envelopes_get_invalid_request(wire: AcpWire) -> None:
    wire.send({"jsonrpc": "2.0", "id": "m", "method": 7})
    assert kind_of(wire.answer("m")) == (-32600, "invalidRequest")
    for bad_id in ({"a": 1}, [1], 1.5, True):
        wire.send({"jsonrpc": "2.0", "id": bad_id, "method": "initialize", "params": {"protocolVersion": 1}})
        assert kind_of(wire.answer(None)) == (-32600, "invalidRequest")
    wire.send({"jsonrpc": "2.0", "id": "p", "method": "session/new", "params": [1, 2]})
    assert kind_of(wire.answer("p")) == (-32602, "invalidParams")
    # a response to no request of the agent's, and a notification it does not know: nothing, no crash
    wire.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    wire.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": ["x"]}})
    wire.send({"jsonrpc": "2.0", "method": "no/such"})
    still_serving(wire)


def test_wrong_params_are_invalid_params_with_json_data(wire: AcpWire, workspace: Path) -> None:
    wire.send({"jsonrpc": "2.0", "id": "n", "method": "session/new", "params": {"cwd": 5, "mcpServers": "x"}})
    code, kind = kind_of(wire.answer("n"))
    assert (code, kind) == (-32602, "invalidParams")
    wire.send({"jsonrpc": "2.0", "id": "r", "method": "session/new", "params": {"cwd": "rel", "mcpServers": []}})
    assert kind_of(wire.answer("r")) == (-32602, "invalidParams")
    wire.send({"jsonrpc": "2.0", "id": "u", "method": "no/such", "params": {}})
    assert kind_of(wire.answer("u")) == (-32601, "methodNotFound")
    prompt = {"sessionId": "conv_none", "prompt": [{"type": "text", "text": "hi"}]}
    wire.send({"jsonrpc": "2.0", "id": "q", "method": "session/prompt", "params": prompt})
    assert kind_of(wire.answer("q"))[1] == "conversationNotOpen"
    load = {"sessionId": "conv_none", "cwd": str(workspace), "mcpServers": []}
    wire.send({"jsonrpc": "2.0", "id": "l", "method": "session/load", "params": load})
    assert kind_of(wire.answer("l"))[1] == "conversationNotFound"
    still_serving(wire)


def test_lone_surrogates_and_nul_bytes_are_refused_not_fatal(wire: AcpWire, workspace: Path) -> None:
    created = wire.request("session/new", {"cwd": str(workspace), "mcpServers": []})["result"]
    prompt = {"sessionId": created["sessionId"], "prompt": [{"type": "text", "text": "\ud800"}]}
    wire.send({"jsonrpc": "2.0", "id": "s", "method": "session/prompt", "params": prompt})  # json escapes it
    assert kind_of(wire.answer("s")) == (-32602, "invalidParams")
    wire.send(
        {"jsonrpc": "2.0", "id": "z", "method": "session/new", "params": {"cwd": "/tmp/a\x00b", "mcpServers": []}}
    )
    assert kind_of(wire.answer("z")) == (-32602, "invalidParams")
    still_serving(wire)


def test_a_line_over_the_limit_is_refused_and_the_next_served(wire: AcpWire) -> None:
    wire.send_bytes(
        b'{"jsonrpc":"2.0","id":"big","method":"initialize","params":{"x":"' + b"a" * (2 * LIMIT) + b'"}}\n'
    )
    assert kind_of(wire.answer(None)) == (-32020, "messageTooLarge")
    still_serving(wire)


def test_a_request_id_already_in_flight_is_refused(wire: AcpWire, workspace: Path) -> None:
    # two prompts with one id: the second is refused while the first waits (no model: it fails fast,
    # so the two are sent together)
    created = wire.request("session/new", {"cwd": str(workspace), "mcpServers": []})["result"]
    prompt = {"sessionId": created["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    line = json.dumps({"jsonrpc": "2.0", "id": "twice", "method": "session/prompt", "params": prompt}).encode()
    wire.send_bytes(line + b"\n" + line + b"\n")
    first, second = wire.answer("twice"), wire.answer("twice")
    assert {"invalidRequest"} <= {m["error"]["data"]["kind"] for m in (first, second) if "error" in m}
    still_serving(wire)


def test_a_bad_value_is_not_echoed_back_even_when_it_is_no_utf_8(wire: AcpWire) -> None:
    # pydantic's errors hold the value sent: a lone surrogate in it could not be written as UTF-8, and a
    # huge one would come back whole
    for value in ("\ud800", "x" * 100_000):
        wire.send({"jsonrpc": "2.0", "id": "e", "method": "session/new", "params": {"cwd": {"k": value}}})
        answer = wire.answer("e")
        assert kind_of(answer) == (-32602, "invalidParams")
        assert len(json.dumps(answer)) < 5000 and "input" not in json.dumps(answer["error"]["data"])
    still_serving(wire)
