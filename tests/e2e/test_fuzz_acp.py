"""test_fuzz_wire.py's search on the ACP wire (`openvaala-lsp --acp`), in both modes, with hypothesis.

Each example writes a few lines — random JSON, random envelopes, every ACP method the agent answers
with random or wrongly typed params, random bytes, bad ids, batches — then a valid request. After every
example the process is alive and answers it; every request with a usable id got an answer; every line
the agent wrote is a JSON object, and every error carries `data.kind` (of the known kinds) and no
traceback. Derandomized: `OPENVAALA_ACP_FUZZ_EXAMPLES` per mode, 1000 unless set.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_wire import AcpWire
from hypothesis import HealthCheck, given, settings, strategies as st

from openvaala_lsp.protocol.codes import CODES

EXAMPLES = int(os.environ.get("OPENVAALA_ACP_FUZZ_EXAMPLES") or 1000)
LIMIT = 256 * 1024
METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "session/cancel",
    "session/fork",
    "_openvaala/anything",
    "no/such",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["/", "/tmp", "\x00", "\ud800", "conv_x", "default", "model", "fake/fake-model"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12,
)
FIELDS = ["sessionId", "cwd", "mcpServers", "prompt", "modeId", "configId", "value", "protocolVersion", "cursor"]
params = st.one_of(values, st.dictionaries(st.sampled_from(FIELDS), values, max_size=5))
ids = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.floats(allow_nan=False), st.lists(st.integers()))
counter = itertools.count()


@st.composite
def lines(draw: st.DrawFn) -> tuple[bytes, Any]:
    """A line, and the id it must be answered with (None: no answer can be required)."""
    shape = draw(st.sampled_from(["request", "request", "request", "notification", "envelope", "json", "bytes"]))
    if shape in ("request", "notification"):
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": draw(st.sampled_from(METHODS))}
        if draw(st.booleans()):
            message["params"] = draw(params)
        answer_id = None
        if shape == "request":
            answer_id = message["id"] = f"fz{next(counter)}"
        return json.dumps(message).encode(), answer_id
    if shape == "envelope":
        envelope = draw(
            st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), values)
        )
        if draw(st.booleans()):
            envelope["id"] = draw(ids)
        return json.dumps(envelope).encode(), None
    if shape == "json":
        return json.dumps(draw(values)).encode(), None
    return draw(st.binary(max_size=60)).replace(b"\n", b" "), None


@pytest.fixture(params=["front", "standalone"])
def wire(request: pytest.FixtureRequest, home: Path, workspace: Path) -> Iterator[AcpWire]:
    args = ["--standalone"] if request.param == "standalone" else []
    client = AcpWire(home, workspace, args=args, env={"OPENVAALA_MAX_MESSAGE_BYTES": str(LIMIT)})
    assert "result" in client.request("initialize", {"protocolVersion": 1})
    yield client
    client.close()
    assert client.process.returncode == 0


def check(message: dict[str, Any]) -> None:
    error = message.get("error")
    if error is None:
        return
    assert error["data"]["kind"] in CODES, error
    assert CODES[error["data"]["kind"]] == error["code"] or error["data"]["kind"] == "internal", error
    assert "Traceback" not in json.dumps(error)


@pytest.mark.fuzz
@pytest.mark.timeout(180 + EXAMPLES // 2)
def test_hostile_acp_input_never_takes_the_process_down(wire: AcpWire) -> None:
    @settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(st.lists(lines(), min_size=1, max_size=4))
    def example(chunk: list[tuple[bytes, Any]]) -> None:
        wire.send_bytes(b"".join(line + b"\n" for line, _ in chunk))
        for _, answer_id in chunk:
            if answer_id is not None:
                check(wire.answer(answer_id))
        assert wire.request("session/list", {})["result"] is not None
        assert wire.broken is None and wire.process.poll() is None
        for error in wire.errors():
            check({"error": error})

    example()
