"""Ephemeral conversations: held in memory only (no row in any table, whatever they do), listed and
usable while they live, deleted once left without a subscriber and idle for the configured time, gone
after a restart; a fork of one is ephemeral too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import API_KEY, Session, definitions

TABLES = ("conversations", "sessions", "turns", "items", "pending_inputs", "model_calls")


async def rows_about(harness: Harness, conversation_id: str) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        column = "id" if table == "conversations" else "conversation_id"
        found = await harness.call(
            "query", {"sql": f"SELECT count(*) FROM {table} WHERE {column} = ?", "parameters": [conversation_id]}
        )
        counts[table] = found["rows"][0][0]
    return counts


async def start(home: Path, workspace: Path, provider: FakeProviderServer, idle: float) -> Harness:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, unsaved_idle_timeout=idle)
    await harness.call("setDefinitions", definitions(provider))
    return harness


async def test_an_ephemeral_conversation_writes_nothing_to_the_database(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    agent = await start(home, workspace, provider, idle=60)
    try:
        kept = await agent.call("createConversation")
        conversation = await agent.call("createConversation", {"ephemeral": True})
        assert conversation["ephemeral"] is True
        session = await Session.open(agent, conversation["id"])
        provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
        await session.submit("hello")
        assert (await session.turn_completed())["status"] == "completed"
        await session.submit("queued while running?")
        await session.turn_completed(2)
        forked = await agent.call("forkConversation", {"conversationId": conversation["id"]})
        assert forked["ephemeral"] is True
        async with asyncio.timeout(10):  # its title call too stays in memory
            while not (await agent.call("getConversation", {"conversationId": conversation["id"]}))["title"]:
                await asyncio.sleep(0.02)
        for cid in (conversation["id"], forked["id"]):
            assert await rows_about(agent, cid) == dict.fromkeys(TABLES, 0)
        # while it lives it is everything a conversation is
        listed = [e["conversation"]["id"] for e in (await agent.call("listConversations"))["items"]]
        assert set(listed) == {kept["id"], conversation["id"], forked["id"]}
        assert len(await session.items()) == 4
        details = await agent.call("getSessionDetails", {"conversationId": session.id, "sessionId": session.session_id})
        assert details["turnCount"] == 2 and details["itemCount"] == 4
        assert await rows_about(agent, kept["id"]) == {**dict.fromkeys(TABLES, 0), "conversations": 1, "sessions": 1}
    finally:
        await agent.stop()
    # a restarted runtime knows nothing of it
    again = await start(home, workspace, provider, idle=60)
    try:
        with pytest.raises(ResponseError) as err:
            await again.call("getConversation", {"conversationId": conversation["id"]})
        assert err.value.kind == "conversationNotFound"
        assert [e["conversation"]["id"] for e in (await again.call("listConversations"))["items"]] == [kept["id"]]
    finally:
        await again.stop()


async def test_an_unwatched_idle_ephemeral_conversation_is_deleted(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    agent = await start(home, workspace, provider, idle=0.3)
    try:
        conversation = await agent.call("createConversation", {"ephemeral": True})
        watched = await agent.call("subscribeConversation", {"conversationId": conversation["id"]})
        await asyncio.sleep(0.8)  # watched: it stays
        assert (await agent.call("getConversation", {"conversationId": conversation["id"]}))["id"] == conversation["id"]
        await agent.call("unsubscribe", {"subscriptionId": watched["subscriptionId"]})
        async with asyncio.timeout(10):
            while [e for e in (await agent.call("listConversations"))["items"]]:
                await asyncio.sleep(0.05)
        with pytest.raises(ResponseError) as err:
            await agent.call("getConversation", {"conversationId": conversation["id"]})
        assert err.value.kind == "conversationNotFound"
    finally:
        await agent.stop()


async def test_lists_merge_ephemeral_and_saved_conversations_in_order(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    agent = await start(home, workspace, provider, idle=60)
    try:
        created = [(await agent.call("createConversation", {"ephemeral": n % 2 == 0}))["id"] for n in range(7)]
        seen: list[str] = []
        cursor = None
        while True:
            page = await agent.call("listConversations", {"limit": 2, **({"cursor": cursor} if cursor else {})})
            seen += [entry["conversation"]["id"] for entry in page["items"]]
            if (cursor := page.get("nextCursor")) is None:
                break
        assert seen == created[::-1]  # newest first, across both stores, each once
        ascending = await agent.call("listConversations", {"order": "asc", "limit": 500})
        assert [entry["conversation"]["id"] for entry in ascending["items"]] == created
    finally:
        await agent.stop()
