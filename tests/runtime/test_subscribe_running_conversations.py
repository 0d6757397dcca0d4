"""subscribeRunningConversations, and the session updates conversation subscribers see."""

from __future__ import annotations

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import Session


async def test_running_conversations_and_session_updates(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("a").pause(0.3).finish().response())
    running = await agent.call("subscribeRunningConversations")
    assert running["initial"] == {"conversationIds": []}
    session = await Session.open(agent)
    watched = await agent.call("subscribeConversation", {"conversationId": session.id})
    await session.submit("go")
    await session.turn_completed()
    await agent.wait_for(lambda m: m["method"] == "openvaala/runningConversations" and m["params"]["seq"] == 2)
    updates = agent.of("openvaala/runningConversations", running["subscriptionId"])
    assert [u["conversationIds"] for u in updates] == [[session.id], []]
    infos = [
        n["event"]["info"]
        for n in agent.of("openvaala/conversationEvent", watched["subscriptionId"])
        if n["event"]["type"] == "sessionUpdated"
    ]
    assert "running" in [i["state"] for i in infos] and infos[-1]["state"] == "idle"
    assert infos[-1]["lastTurnStatus"] == "completed"
