"""Property-based fuzzing of the wire against the real process, in both modes (the front relaying to
the runtime host, and --standalone), with hypothesis.

Each example writes a few chunks — random and mutated frames, broken headers, random JSON envelopes,
wrong types for every field of every method (generated from `schemas/`), deep nesting, huge
strings, bad UTF-8, lone surrogates, NUL bytes, bad ids, batches — interleaved with valid requests.
After every example the process is alive and answers a valid request; every request with a usable
id got an answer; every answer is valid JSON, and every error carries `data.kind` (of the known
kinds), a bounded message and no traceback. Where the right error is known, it is checked too.

The budget is fixed and the run derandomized (the same examples on every run):
`OPENVAALA_FUZZ_EXAMPLES` per mode, 2000 unless set; `bash scripts/fuzz.sh` runs a longer search.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from wire_client import WireClient

from openvaala_lsp.protocol.codes import CODES

EXAMPLES = int(os.environ.get("OPENVAALA_FUZZ_EXAMPLES") or 2000)
LIMIT = 256 * 1024  # the message limit of the fuzzed process, so over-limit messages stay cheap
SCHEMAS = Path(__file__).parent.parent.parent / "schemas"
MAX_MESSAGE = 1100  # an error message's bound (1000) plus its length note
SKIP_TYPED = {  # right-typed values for these could define commands or endpoints: only wrong types
    "openvaala/setDefinitions",
    "openvaala/setClientMcpServers",
}
EXAMPLE_COUNTS: dict[str, int] = {}  # mode -> examples run, printed in the terminal summary

# The JSON-RPC envelope and its ids


ids = itertools.count()
PLACEHOLDER = "fz@@@@@@@@"  # generation must not depend on a counter: each run fills in a fresh id


def fresh_id() -> str:
    return PLACEHOLDER


def stamped(chunk: Chunk) -> Chunk:
    """The chunk with its placeholder id replaced by a unique id of the same length."""
    unique = f"fz{next(ids):08d}"
    data = chunk.data.replace(PLACEHOLDER.encode(), unique.encode())
    answer_id = unique if chunk.answer_id == PLACEHOLDER else chunk.answer_id
    return attrs.evolve(chunk, data=data, answer_id=answer_id)


@attrs.define
class Chunk:
    data: bytes
    answer_id: Any = None  # the id the server must answer (None: no answer can be required)
    expect: tuple[str, str] | None = None  # (kind, text the message must contain)
    method: str | None = None  # set when `expect` comes from the method's handler, not the transport


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def no_header(data: bytes) -> bytes:
    """Random bytes that cannot hold a Content-Length header (the next frame's must stay the first)."""
    return re.sub(rb"(?i)ontent", b"ontenX", data)


def request(method: str, params: Any, *, expect: tuple[str, str] | None = None) -> Chunk:
    msg_id = fresh_id()
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    if len(body) > LIMIT:
        expect = ("messageTooLarge", "")
    return Chunk(framed(body), msg_id, expect)


# Wrong types for every field of every method, from the generated schemas


def _methods() -> dict[str, dict[str, Any]]:
    table = json.loads((SCHEMAS / "methods.json").read_text())
    return {
        row["method"]: json.loads((SCHEMAS / row["params"]["$ref"]).read_text())
        for row in table["methods"]
        if row["direction"] == "clientToServer" and "params" in row
    }


METHOD_SCHEMAS = _methods()
JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _types(schema: dict[str, Any], root: dict[str, Any]) -> set[str] | None:
    """The JSON types a field accepts; None when it accepts any value."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            found: set[str] = set()
            for option in schema[key]:
                types = _types(option, root)
                if types is None:
                    return None
                found |= types
            return found
    if "const" in schema:
        return {"string"}
    kind = schema.get("type")
    if kind is None:
        return None
    found = {kind} if isinstance(kind, str) else set(kind)
    return found | {"integer"} if "number" in found else found


def _minimal(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The smallest valid value of a schema (required fields only)."""
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _minimal(schema[key][0], root)
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _minimal(properties[name], root) for name in schema.get("required", [])}
    return {"string": "x", "integer": 1, "number": 1.5, "boolean": False, "array": [], "null": None}.get(kind, {})


def _fields(schema: dict[str, Any], root: dict[str, Any], path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every field (objects' properties, arrays' first element), three levels deep."""
    schema = _resolve(schema, root)
    if len(path) >= 3:
        return
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key, []):
            yield from _fields(option, root, path)
    for name, sub in schema.get("properties", {}).items():
        yield (*path, name)
        yield from _fields(sub, root, (*path, name))
    if "items" in schema:
        yield from _fields(schema["items"], root, (*path, 0))


def _schema_at(schema: dict[str, Any], root: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    for step in path:
        schema = _resolve(schema, root)
        if isinstance(step, int):
            schema = schema["items"]
        else:
            schema = next(
                (
                    option
                    for key in ("anyOf", "oneOf")
                    for option in schema.get(key, [])
                    if step in _resolve(option, root).get("properties", {})
                ),
                schema,
            )
            schema = _resolve(schema, root)["properties"][step]
    return schema


def _wire_path(path: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)


FIELD_CASES = [
    (method, path, types)
    for method, root in METHOD_SCHEMAS.items()
    for path in dict.fromkeys(_fields(root, root))
    if (types := _types(_schema_at(root, root, path), root)) is not None
]


def json_values(kind: str) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
    return {
        "null": st.none(),
        "boolean": st.booleans(),
        "integer": st.integers(),
        "number": st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
        "string": st.text(max_size=30),
        "array": st.lists(leaves, max_size=3),
        "object": st.dictionaries(st.text(max_size=5), leaves, max_size=3),
    }[kind]


@st.composite
def wrong_type(draw: st.DrawFn) -> Chunk:
    method, path, allowed = draw(st.sampled_from(FIELD_CASES))
    wrong = [kind for kind in JSON_TYPES if kind not in allowed]
    if not wrong:
        return request(method, {})
    root = METHOD_SCHEMAS[method]
    params = _minimal(root, root)
    target: Any = params
    for step, following in itertools.pairwise(path):
        if isinstance(step, int):
            while len(target) <= step:
                target.append({} if isinstance(following, str) else [])
        elif not isinstance(target.get(step), (dict, list)):
            target[step] = {} if isinstance(following, str) else []
        target = target[step]
    value = draw(json_values(draw(st.sampled_from(wrong))))
    if isinstance(path[-1], int):
        target.append(value)
    else:
        target[path[-1]] = value
    chunk = request(method, params, expect=("invalidParams", _wire_path(path)))
    if chunk.expect == ("invalidParams", _wire_path(path)):
        chunk.method = method
    return chunk


@st.composite
def typed_params(draw: st.DrawFn) -> Chunk:
    """Right-typed random values: they may be refused, but never crash or hang."""
    method = draw(st.sampled_from(sorted(set(METHOD_SCHEMAS) - SKIP_TYPED)))
    root = METHOD_SCHEMAS[method]
    params = _minimal(root, root)
    for name in draw(
        st.lists(st.sampled_from(sorted(_resolve(root, root).get("properties", {})) or ["x"]), max_size=3)
    ):
        schema = _resolve(root, root).get("properties", {}).get(name, {})
        kinds = sorted((_types(schema, root) or {"string"}) - {"array", "object"}) or ["string"]
        params[name] = draw(json_values(draw(st.sampled_from(kinds))))
    return request(method, params)


# Hostile text and shapes

NASTY_TEXT = st.sampled_from(
    ["\0", "a\0b", "\ud800", "x\udfff", "\ud83d\ude00", "\u2028", "\x7f", "é" * 50, "../../etc"]
)
STRING_FIELDS = [
    ("openvaala/listConversations", "query"),
    ("openvaala/createConversation", "agentName"),
    ("openvaala/resolveWorkspaceDirectory", "directory"),
    ("openvaala/getWorkspaceDirectories", "baseDirectory"),
    ("openvaala/openTerminalWorkspace", "directory"),
    ("openvaala/getConversation", "conversationId"),
    ("openvaala/unsubscribe", "subscriptionId"),
    ("openvaala/query", "sql"),
]


@st.composite
def nasty_string(draw: st.DrawFn) -> Chunk:
    method, field = draw(st.sampled_from(STRING_FIELDS))
    text = draw(st.lists(NASTY_TEXT | st.text(max_size=5), min_size=1, max_size=4).map("".join))
    if draw(st.booleans()):  # huge: some under the limit, some over
        text = text * draw(st.integers(1, 2 * LIMIT // max(1, len(json.dumps(text)))))
    chunk = request(method, {field: text})
    received = json.loads(json.dumps(text))  # "\ud83d\ude00" here is two code points, there one emoji
    if any(0xD800 <= ord(c) <= 0xDFFF for c in received) and chunk.expect is None:
        chunk.expect = ("invalidParams", f"$.{field}")
    return chunk


@st.composite
def bad_utf8(draw: st.DrawFn) -> Chunk:
    msg_id = fresh_id()
    junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80"]))
    body = b'{"jsonrpc":"2.0","id":"%s","method":"openvaala/listConversations","params":{"query":"a%sb"}}' % (
        msg_id.encode(),
        junk,
    )
    return Chunk(framed(body), msg_id, ("parseError", ""))


@st.composite
def deep(draw: st.DrawFn) -> Chunk:
    depth = draw(st.integers(90, 120) | st.integers(1000, 200_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    msg_id = fresh_id()
    body = b'{"jsonrpc":"2.0","id":"%s","method":"openvaala/isIdle","params":{"x":%s1%s}}' % (
        msg_id.encode(),
        opener * depth,
        closer * depth,
    )
    if len(body) > LIMIT:
        return Chunk(framed(body), msg_id, ("messageTooLarge", ""))
    return Chunk(framed(body), msg_id, ("messageTooLarge", "") if depth + 2 > 100 else None)


@st.composite
def bad_envelope(draw: st.DrawFn) -> Chunk:
    msg_id = fresh_id()
    good = {"jsonrpc": "2.0", "id": msg_id, "method": "openvaala/isIdle", "params": {}}
    case = draw(st.sampled_from(["id", "method", "jsonrpc", "batch", "constant", "params", "drop"]))
    if case == "id":
        bad = draw(st.sampled_from([{"a": 1}, [1], 1.5, True, None, -0.0, 1e300]))
        body = json.dumps({**good, "id": bad}).encode()
        return Chunk(framed(body), None, ("invalidRequest", ""))
    if case == "method":
        bad = draw(json_values(draw(st.sampled_from(["null", "boolean", "integer", "array", "object"]))))
        return Chunk(framed(json.dumps({**good, "method": bad}).encode()), msg_id, ("invalidRequest", ""))
    if case == "jsonrpc":
        bad = draw(st.sampled_from(["1.0", 2, None, "2.00"]))
        return Chunk(framed(json.dumps({**good, "jsonrpc": bad}).encode()), msg_id, ("invalidRequest", ""))
    if case == "batch":
        body = json.dumps(draw(st.lists(st.just(good), max_size=3))).encode()
        return Chunk(framed(body), None, ("invalidRequest", "batch"))
    if case == "constant":
        constant = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]))
        body = b'{"jsonrpc":"2.0","id":%s,"method":"openvaala/isIdle"}' % constant
        return Chunk(framed(body), None, ("parseError", ""))
    if case == "params":
        bad = draw(json_values(draw(st.sampled_from(["boolean", "integer", "string", "array"]))))
        return Chunk(framed(json.dumps({**good, "params": bad}).encode()), msg_id, ("invalidParams", "$"))
    del good[draw(st.sampled_from(["jsonrpc", "method", "params"]))]
    expected = ("invalidRequest", "") if "method" not in good or "jsonrpc" not in good else None
    return Chunk(framed(json.dumps(good).encode()), msg_id, expected)


JSON_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def random_json(draw: st.DrawFn) -> Chunk:
    """Any JSON as a whole message, or as one member of an otherwise valid request."""
    if draw(st.booleans()):
        return Chunk(framed(json.dumps(draw(JSON_ANY)).encode()))
    member = draw(st.sampled_from(["id", "method", "params", "jsonrpc", "result", "error"]))
    message = {"jsonrpc": "2.0", "method": draw(st.sampled_from(sorted(METHOD_SCHEMAS))), member: draw(JSON_ANY)}
    return Chunk(framed(json.dumps(message).encode()))


HEADER_LINES = st.sampled_from(
    [
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8",
        b"content-length: 7",
        b"Content-Length: -1",
        b"Content-Length: 1e3",
        b"Content-Length: 99999999999999999999999",
        b"Content-Length:",
        b"X-Junk: " + b"a" * 9000,
        b"no colon here",
        b"Content-Length: 3",
        b"",
    ]
)


@st.composite
def bad_header(draw: st.DrawFn) -> Chunk:
    """A header block that is wrong in some way, always ended so the stream can resynchronize."""
    lines = draw(st.lists(HEADER_LINES, min_size=1, max_size=40))
    # the body outlasts any length above, and an empty line ends what is left of it as a bad header
    body = no_header(draw(st.binary(min_size=8, max_size=64)))
    return Chunk(b"\r\n".join(line for line in lines if line) + b"\r\n\r\n" + body + b"\r\n\r\n")


@st.composite
def garbage(draw: st.DrawFn) -> Chunk:
    """Random bytes, framed or not; a frame whose length is too short leaves junk, which an empty line
    ends (junk that ran into the next frame's header would cost that frame: garbage in, garbage out)."""
    data = no_header(draw(st.binary(max_size=300)))
    kind = draw(st.sampled_from(["framed", "raw", "short"]))
    if kind == "framed":
        return Chunk(framed(data))
    if kind == "short":
        return Chunk(b"Content-Length: %d\r\n\r\n%s\r\n\r\n" % (len(data) // 2, data))
    return Chunk(data + b"\r\n\r\n")


@st.composite
def mutated(draw: st.DrawFn) -> Chunk:
    """A valid request with a few of its body's bytes replaced or removed."""
    body = bytearray(
        json.dumps(
            {"jsonrpc": "2.0", "id": fresh_id(), "method": "openvaala/listConversations", "params": {"limit": 2}}
        ).encode()
    )
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(body) - 1))
        if draw(st.booleans()):
            body[position] = draw(st.integers(0, 255))
        else:
            del body[position]
    return Chunk(framed(bytes(body)))


VALID = st.sampled_from(
    [
        ("openvaala/isIdle", None),
        ("openvaala/listConversations", {"limit": 3}),
        ("openvaala/listAgents", {}),
        ("openvaala/createConversation", {}),
        ("openvaala/getWorkspaceDirectories", {}),
    ]
).map(lambda pair: request(*pair))

CHUNKS = st.one_of(
    wrong_type(), typed_params(), nasty_string(), bad_utf8(), deep(), bad_envelope(), random_json(),
    bad_header(), garbage(), mutated(), VALID,
)  # fmt: skip


# The property


def check_answer(message: dict[str, Any]) -> None:
    if "error" not in message:
        return
    error = message["error"]
    assert isinstance(error.get("code"), int), message
    kind = (error.get("data") or {}).get("kind")
    assert kind in CODES and CODES[kind] == error["code"], message
    assert "traceback" not in json.dumps(error), message
    assert len(error.get("message", "")) <= MAX_MESSAGE, len(error["message"])


def run_example(client: WireClient, chunks: list[Chunk], advertised: set[str]) -> None:
    seen = len(client.messages)
    chunks = [stamped(chunk) for chunk in chunks]
    for chunk in chunks:
        client.send_bytes(chunk.data)
    probe = f"probe{next(ids)}"
    client.send_body(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "openvaala/isIdle"}).encode())
    assert client.wait_response(probe, timeout=30)["result"] == {"idle": True}
    for chunk in chunks:
        if chunk.answer_id is not None:
            answer = client.wait_response(chunk.answer_id, timeout=30)
            if chunk.expect is not None:
                kind, text = chunk.expect
                if chunk.method is not None and chunk.method not in advertised:
                    kind, text = "methodNotFound", ""  # not built yet: no handler checks its params
                assert "error" in answer and answer["error"]["data"]["kind"] == kind, (chunk.data[:300], answer)
                assert text in answer["error"]["message"], (chunk.data[:300], answer)
    for message in client.messages[seen:]:
        check_answer(message)
    for chunk in chunks:
        if chunk.answer_id is None and chunk.expect is not None:
            kind, text = chunk.expect
            assert any(
                m.get("id") is None and m.get("error", {}).get("data", {}).get("kind") == kind
                for m in client.messages[seen:]
            ), (chunk.data[:300], client.messages[seen:])
    assert client.process.poll() is None


@pytest.fixture(params=["front", "standalone"])
def wire(request: pytest.FixtureRequest, home: Path, workspace: Path) -> Iterator[tuple[str, WireClient, set[str]]]:
    args = ["--standalone"] if request.param == "standalone" else []
    client = WireClient(home, workspace, args=args, env={"OPENVAALA_MAX_MESSAGE_BYTES": str(LIMIT)})
    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    initialized = client.request("init", "initialize", init)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    yield request.param, client, set(initialized["result"]["capabilities"]["experimental"]["openvaala"]["methods"])
    assert client.close() == 0


@pytest.mark.fuzz
@pytest.mark.timeout(120 + EXAMPLES // 5)  # a few milliseconds an example; every wait has its own bound
def test_hostile_input_never_takes_the_process_down(wire: tuple[str, WireClient, set[str]]) -> None:
    mode, client, advertised = wire
    EXAMPLE_COUNTS[mode] = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(CHUNKS, min_size=1, max_size=4))
    def example(chunks: list[Chunk]) -> None:
        EXAMPLE_COUNTS[mode] += 1
        run_example(client, chunks, advertised)

    example()
