"""kill -9 of the runtime host while the model streams its answer: after the restart the partial
answer is in the log, `interrupted`, with the text saved before the kill, and the turn reads
`interrupted` with `reason: runtimeStopped` everywhere (listTurns, getTurns, SQL)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from test_host import homes, host_pids, spawn, ws  # noqa: F401 (fixtures)
from turn_helpers import API_KEY, Session, definitions, query, text_of

PIECE = "the answer so far, paced. "  # 26 characters
PIECES = 240  # ~6 KiB: one save by growth (4 KiB), the rest by time once the model stalls


async def test_a_partial_answer_survives_a_killed_host(
    homes: list[Path],  # noqa: F811
    ws: Path,  # noqa: F811
    provider: FakeProviderServer,
) -> None:
    home = homes[0]
    stream = ChatStream()
    for _ in range(PIECES):
        stream.text(PIECE).pause(0.002)  # one delta at a time, as a model writes
    provider.enqueue("openai-chat", stream.pause(120).finish().response())
    editor = await spawn(home, ws, env={"FAKE_API_KEY": API_KEY})
    try:
        await editor.initialize([ws])
        await editor.call("setDefinitions", definitions(provider))
        session = await Session.open(editor)
        await session.submit("question")
        streamed = PIECE * PIECES
        answer_id = (
            await session.wait_event(lambda e: e["type"] == "itemStarted" and e["item"]["type"] == "assistantMessage")
        )["item"]["id"]
        await session.wait_event(
            lambda _: "".join(e["delta"] for e in session.events() if e["type"] == "itemDelta") == streamed
        )

        sql = "SELECT payload->>'$.content[0].text' FROM streaming_items WHERE item_id = ?"
        saved: list[str] = []

        async def saved_whole() -> bool:
            saved[:] = [row[0] for row in (await query(editor, sql, answer_id))["rows"]]
            return saved == [streamed]

        await until_true(saved_whole, "the host saved the whole partial answer")
        [host] = host_pids(home)
        os.kill(host, signal.SIGKILL)
        await editor.wait_for(
            lambda m: m["method"] == "openvaala/subscriptionClosed" and m["params"]["subscriptionId"] == session.sub
        )

        [turn] = (await editor.call("listTurns", {"conversationId": session.id}))["items"]
        assert (turn["status"], turn["reason"]) == ("interrupted", "runtimeStopped")
        got = await editor.call("getTurns", {"conversationId": session.id, "turnIds": [turn["id"]]})
        assert got["turns"] == [turn]
        items = [logged["item"] for logged in (await editor.call("listItems", {"conversationId": session.id}))["items"]]
        assert [(i["type"], i["status"]) for i in items] == [
            ("userMessage", "completed"),
            ("assistantMessage", "interrupted"),
        ]
        assert items[1]["id"] == answer_id and text_of(items[1]) == streamed
        found = await query(editor, "SELECT status, reason FROM turns_v WHERE turn_id = ?", turn["id"])
        assert found["rows"] == [["interrupted", "runtimeStopped"]]
        left = await query(editor, "SELECT count(*) FROM streaming_items")
        assert left["rows"] == [[0]]
    finally:
        await editor.shutdown()


async def until_true(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """`test_host.until` for a check that asks the host."""
    try:
        async with asyncio.timeout(20):
            while not await check():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"timed out waiting until {what}")
