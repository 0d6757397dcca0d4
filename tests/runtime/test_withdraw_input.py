"""withdrawInput: a queued input taken back before any turn took it."""

from __future__ import annotations

import asyncio

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import Session


async def test_queue_then_withdraw(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("slow").pause(1.0).text(" answer").finish().response())
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "turnStarted")
    queued = await session.submit("second, queued")
    added = await session.wait_event(lambda e: e["type"] == "pendingInputAdded" and e["item"]["id"] == queued)
    assert added["mode"] == "queue" and added["item"]["status"] == "pending"
    details = await agent.call("getSessionDetails", {"conversationId": session.id, "sessionId": session.session_id})
    assert [p["item"]["id"] for p in details["pendingInputs"]] == [queued]
    withdrawn = await agent.call("withdrawInput", {"conversationId": session.id, "itemId": queued})
    assert [(i["id"], i["status"]) for i in withdrawn["items"]] == [(queued, "withdrawn")]
    with pytest.raises(ResponseError) as err:
        await agent.call("withdrawInput", {"conversationId": session.id, "itemId": queued})
    assert err.value.kind == "notFound"
    turn = await session.turn_completed()
    assert turn["status"] == "completed"
    await asyncio.sleep(0.3)
    assert len(provider.requests_for("openai-chat")) == 1  # the withdrawn input never ran
    assert [item["type"] for item in await session.items()] == ["userMessage", "assistantMessage"]
    assert await agent.call("isIdle") == {"idle": True}
