"""Titles: written after the first exchange by a cheap call (the session's model, or the agent's
titleModel), announced with titleChanged; a title the user set is never overwritten; an agent can
turn them off; a failing title call changes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import Session, definitions

from openvaala_lsp.runtime.titles import TITLE_INSTRUCTIONS


async def title_of(agent: Harness, conversation_id: str) -> str:
    return str((await agent.call("getConversation", {"conversationId": conversation_id}))["title"])


async def wait_title(agent: Harness, conversation_id: str) -> str:
    async with asyncio.timeout(10):
        while not (title := await title_of(agent, conversation_id)):
            await asyncio.sleep(0.02)
    return title


async def test_the_first_exchange_gets_a_title(agent: Harness, provider: FakeProviderServer) -> None:
    provider.title_text = '"Parsing CSV files in Rust."\nSome chatter the model adds'
    provider.set_default("openai-chat", ChatStream().text("Use the csv crate.").finish().response())
    session = await Session.open(agent)
    watched = await agent.call("subscribeConversation", {"conversationId": session.id})
    await session.submit("How do I parse CSV in Rust?")
    await session.turn_completed()
    assert await wait_title(agent, session.id) == "Parsing CSV files in Rust"
    changed = await agent.wait_for(
        lambda m: m["method"] == "openvaala/conversationEvent" and m["params"]["event"]["type"] == "titleChanged"
    )
    assert changed["params"]["subscriptionId"] == watched["subscriptionId"]
    [asked] = provider.titles
    body = asked.json
    assert TITLE_INSTRUCTIONS in body["messages"][0]["content"] and not body.get("tools")
    assert "How do I parse CSV in Rust?" in body["messages"][1]["content"]
    assert "Use the csv crate." in body["messages"][1]["content"]
    # once per conversation: later turns ask nothing more
    await session.submit("and JSON?")
    await session.turn_completed(2)
    await asyncio.sleep(0.2)
    assert len(provider.titles) == 1
    rows = await agent.call("query", {"sql": "SELECT purpose, turn_id FROM model_calls ORDER BY started_at"})
    assert [row[0] for row in rows["rows"]] == ["turn", "title", "turn"]


async def test_a_title_the_user_set_is_never_overwritten(agent: Harness, provider: FakeProviderServer) -> None:
    session = await Session.open(agent)
    await agent.call("setConversationTitle", {"conversationId": session.id, "title": "Mine"})
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    await session.submit("hello")
    await session.turn_completed()
    await asyncio.sleep(0.2)
    assert provider.titles == [] and await title_of(agent, session.id) == "Mine"

    # set while the title call is under way: the user's still wins
    other = await Session.open(agent)
    provider.title_text = "Generated"
    await other.submit("hello")
    await other.turn_completed()
    await agent.call("setConversationTitle", {"conversationId": other.id, "title": "Typed by hand"})
    await asyncio.sleep(0.3)
    assert await title_of(agent, other.id) == "Typed by hand"


async def test_the_agents_title_model_writes_it_and_titles_can_be_off(
    agent: Harness, provider: FakeProviderServer
) -> None:
    [model] = definitions(provider)["models"]
    cheap = {**model, "ref": {"provider": "fake", "name": "cheap"}}
    agents: list[dict[str, Any]] = [
        {"name": "titled", "titleModel": cheap["ref"]},
        {"name": "quiet", "titles": False},
    ]
    await agent.call("setDefinitions", {"models": [model, cheap], "agents": agents})
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    for name in ("titled", "quiet"):
        conversation = await agent.call("createConversation", {"agentName": name})
        session = await Session.open(agent, conversation["id"])
        await session.submit("hi")
        await session.turn_completed()
    titled = next(
        entry["conversation"]["id"]
        for entry in (await agent.call("listConversations"))["items"]
        if entry["conversation"]["agentName"] == "titled"
    )
    assert await wait_title(agent, titled)
    await asyncio.sleep(0.2)
    assert [request.json["model"] for request in provider.titles] == ["cheap"]


async def test_a_failed_turn_or_title_call_writes_no_title(agent: Harness, provider: FakeProviderServer) -> None:
    session = await Session.open(agent)
    await session.submit("hi")  # nothing scripted: the turn fails
    assert (await session.turn_completed())["status"] == "failed"
    await asyncio.sleep(0.2)
    assert provider.titles == []  # a title waits for an exchange that worked
    provider.title_text = "   "
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    await session.submit("again")
    await session.turn_completed(2)
    await asyncio.sleep(0.3)
    assert len(provider.titles) == 1 and await title_of(agent, session.id) == ""
