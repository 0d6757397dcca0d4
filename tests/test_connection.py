"""An editor connection in process, over a fed reader and a recording writer: what
`server/protocol.py` fixes in pygls' handling for this server (the wire tests in tests/e2e cover
the rest through the real process)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.server.connection import Connection
from openvaala_lsp.server.protocol import MAX_IN_FLIGHT
from openvaala_lsp.wire.framing import FrameReader, frame

WAIT = 10.0


class Stream:
    """The writer end: every frame written, readable as messages."""

    def __init__(self) -> None:
        self.frames = FrameReader()
        self.messages: list[dict[str, Any]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.messages += [json.loads(body) for body in self.frames.feed(data) if isinstance(body, bytes)]

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    async def drain(self) -> None:
        await asyncio.sleep(0)


class Editor:
    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()
        self.stream = Stream()
        # a runtime that never comes: openvaala requests wait for it, in flight
        self.runtime: asyncio.Future[Runtime] = asyncio.get_running_loop().create_future()
        self.connection = Connection(self.runtime, self.stream, environment={}, cwd="/")  # type: ignore[arg-type]
        self.serving = asyncio.ensure_future(self.connection.serve(self.reader))

    def send(self, message: dict[str, Any]) -> None:
        self.reader.feed_data(frame({"jsonrpc": "2.0", **message}))

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while True:
                for message in self.stream.messages:
                    if message.get("id") == msg_id and "method" not in message:
                        return message
                await asyncio.sleep(0.01)

    async def initialize(self) -> None:
        self.send({"id": "init", "method": "initialize", "params": {"processId": None, "capabilities": {}}})
        assert "result" in await self.answer("init")


@pytest.fixture
async def editor() -> AsyncIterator[Editor]:
    made = Editor()
    yield made
    made.reader.feed_eof()
    await asyncio.wait_for(made.serving, WAIT)


async def test_initialize_advertises_the_lsp_face_and_the_protocol(editor: Editor) -> None:
    editor.send({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    capabilities = (await editor.answer(1))["result"]["capabilities"]
    assert capabilities["workspace"]["workspaceFolders"]["supported"] is True
    openvaala = capabilities["experimental"]["openvaala"]
    assert "openvaala/submitInput" in openvaala["methods"] and "openvaala/sessionEvent" in openvaala["notifications"]


async def test_requests_past_the_in_flight_limit_are_answered_overloaded(editor: Editor) -> None:
    await editor.initialize()
    for msg_id in range(MAX_IN_FLIGHT + 2):
        editor.send({"id": msg_id, "method": "openvaala/isIdle", "params": {}})
    over = await editor.answer(MAX_IN_FLIGHT)
    assert over["error"]["code"] == -32021 and over["error"]["data"]["kind"] == "overloaded"
    assert (await editor.answer(MAX_IN_FLIGHT + 1))["error"]["data"]["kind"] == "overloaded"
    assert not [m for m in editor.stream.messages if m.get("id", -1) in range(MAX_IN_FLIGHT)]  # still in flight
    editor.send({"method": "$/cancelRequest", "params": {"id": 0}})
    cancelled = await editor.answer(0)
    assert cancelled["error"]["code"] == -32800 and cancelled["error"]["data"]["kind"] == "requestCancelled"
    editor.send({"id": "again", "method": "openvaala/isIdle", "params": {}})  # room for one again
    await asyncio.sleep(0.05)
    assert not [m for m in editor.stream.messages if m.get("id") == "again"]


async def test_an_unknown_method_gets_method_not_found_with_a_kind_and_no_traceback(editor: Editor) -> None:
    await editor.initialize()
    editor.send({"id": 7, "method": "textDocument/hover", "params": {}})
    answer = (await editor.answer(7))["error"]
    assert answer["code"] == -32601 and answer["data"] == {"kind": "methodNotFound"}


async def test_a_late_answer_to_a_request_given_up_is_dropped(editor: Editor) -> None:
    """pygls #621: the reply to a server->client request whose waiter was cancelled raised inside the
    read loop, and the next message was never read."""
    await editor.initialize()
    asking = asyncio.ensure_future(editor.connection.protocol.send_request_async("openvaala/callClientTool", {}))
    await asyncio.sleep(0.01)
    [request] = [m for m in editor.stream.messages if m.get("method") == "openvaala/callClientTool"]
    asking.cancel()
    await asyncio.gather(asking, return_exceptions=True)
    editor.send({"id": request["id"], "result": {"late": True}})
    editor.send({"id": "next", "method": "shutdown"})
    assert (await editor.answer("next"))["result"] is None  # still reading


async def test_a_malformed_answer_fails_its_waiter(editor: Editor) -> None:
    await editor.initialize()
    asking = asyncio.ensure_future(editor.connection.protocol.send_request_async("workspace/workspaceFolders"))
    await asyncio.sleep(0.01)
    [request] = [m for m in editor.stream.messages if m.get("method") == "workspace/workspaceFolders"]
    editor.send({"id": request["id"], "error": {"code": "not a number", "message": 5}})
    with pytest.raises(Exception, match="malformed answer"):
        await asyncio.wait_for(asking, WAIT)


async def test_exit_ends_the_connection_not_the_process(editor: Editor) -> None:
    await editor.initialize()
    editor.send({"id": 1, "method": "shutdown"})
    await editor.answer(1)
    editor.send({"id": 2, "method": "openvaala/isIdle", "params": {}})
    assert (await editor.answer(2))["error"]["data"]["kind"] == "runtimeStopped"
    editor.send({"method": "exit"})
    await asyncio.wait_for(editor.serving, WAIT)  # the serving ends; this process goes on
    assert editor.connection.exit_code == 0 and editor.stream.closing
