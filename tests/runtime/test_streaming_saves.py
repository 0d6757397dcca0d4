"""Items saved as they stream (`streaming.TurnItems`, `storage.save_streaming`): never per delta, but
after every 4 KiB of growth, and a second after a growth not saved yet, so a process killed
mid-answer loses at most that; an answer, its reasoning and a tool call's arguments alike. Once an
item is logged its saved row goes. The clock is never asserted on: the tests set the interval."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import Session

from openvaala_lsp.model import Item
from openvaala_lsp.runtime import streaming
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

KIB = "x" * 1024


class Saves:
    """Each save_streaming as (item id, its text or arguments then)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, str]] = []
        self._changed = asyncio.Event()
        save = DuckDBStorage.save_streaming

        def spy(storage: DuckDBStorage, item: Item) -> None:
            grown = item.tool_call.arguments if item.tool_call else (item.content or [])[0].text
            self.seen.append((item.id, grown or ""))
            self._changed.set()
            save(storage, item)

        monkeypatch.setattr(DuckDBStorage, "save_streaming", spy)

    async def until(self, found: Callable[[list[tuple[str, str]]], bool]) -> None:
        async with asyncio.timeout(20):
            while not found(self.seen):
                self._changed.clear()
                await self._changed.wait()


async def saved_rows(agent: Harness) -> list[tuple[Any, ...]]:
    storage = agent.runtime.storage.durable  # type: ignore[attr-defined]
    await storage.flush()
    result = await storage.query("SELECT item_id, payload FROM streaming_items ORDER BY item_id", [], 10)
    return [tuple(row) for row in result.rows]


async def test_an_answer_is_saved_every_4_kib_not_per_delta(
    agent: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "SAVE_EVERY_SECONDS", 3600.0)  # growth alone decides
    saves = Saves(monkeypatch)
    provider.enqueue("openai-chat", ChatStream().text(*[KIB] * 10).pause(30).finish().response())
    session = await Session.open(agent)
    await session.submit("write")
    await session.wait_event(lambda _: _streamed(session) == len(KIB) * 10)
    [started] = [e for e in session.events() if e["type"] == "itemStarted"]
    answer_id = started["item"]["id"]
    assert saves.seen == [(answer_id, KIB * 4), (answer_id, KIB * 8)]  # 10 deltas, 2 saves
    [(item_id, payload)] = await saved_rows(agent)
    assert (item_id, payload["status"], _grown(payload)) == (answer_id, "streaming", KIB * 8)
    await agent.call("interruptTurn", {"conversationId": session.id})
    await session.turn_completed()
    assert await saved_rows(agent) == []  # logged (interrupted, whole): its row went in that commit


async def test_growth_not_saved_yet_is_saved_after_the_interval(
    agent: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short answer, its reasoning and a tool call's arguments, each far below 4 KiB, then the model
    stalls: each is saved as it stands once the interval passes, without another delta."""
    monkeypatch.setattr(streaming, "SAVE_EVERY_SECONDS", 0.05)
    saves = Saves(monkeypatch)
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .reasoning("thinking")
        .text("Let me ", "look.")
        .tool_call("c1", "read_file", ['{"path": ', '"a.txt"}'])
        .pause(30)
        .finish()
        .response(),
    )
    session = await Session.open(agent)
    await session.submit("look")
    wanted = {"thinking", "Let me look.", '{"path": "a.txt"}'}
    await saves.until(lambda seen: wanted <= {grown for _, grown in seen})
    started = [e["item"]["type"] for e in session.events() if e["type"] == "itemStarted"]
    assert started == ["reasoning", "assistantMessage", "toolCall"]
    rows = await saved_rows(agent)
    assert sorted(_grown(payload) for _, payload in rows) == sorted(wanted)
    await agent.call("interruptTurn", {"conversationId": session.id})
    await session.turn_completed()
    assert await saved_rows(agent) == []


async def test_an_ephemeral_conversation_saves_nothing(
    agent: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "SAVE_EVERY_SECONDS", 3600.0)
    saves = Saves(monkeypatch)
    provider.enqueue("openai-chat", ChatStream().text(*[KIB] * 5).finish().response())
    conversation = await agent.call("createConversation", {"ephemeral": True})
    session = await Session.open(agent, conversation["id"])
    await session.submit("write")
    assert (await session.turn_completed())["reason"] == "completed"
    assert saves.seen == [] and await saved_rows(agent) == []


def _grown(payload: dict[str, Any]) -> str:
    """A saved row's text, or its tool call's arguments."""
    call = payload.get("tool_call")
    return str(call["arguments"] if call else payload["content"][0]["text"])


def _streamed(session: Session) -> int:
    return sum(len(e["delta"]) for e in session.events() if e["type"] == "itemDelta")
