"""interruptTurnWithInput: stop the running turn, then run the chosen queued input."""

from __future__ import annotations

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import Session, text_of


async def test_interrupt_with_input(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("long").pause(30).finish().response(),
        ChatStream().text("new direction").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    started = await session.wait_event(lambda e: e["type"] == "turnStarted")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    queued = await session.submit("do this instead")
    await agent.call(
        "interruptTurnWithInput", {"conversationId": session.id, "itemId": queued, "turnId": started["turn"]["id"]}
    )
    assert (await session.turn_completed(1))["status"] == "interrupted"
    assert (await session.turn_completed(2))["status"] == "completed"
    assert [text_of(i) for i in await session.items()] == ["first", "long", "do this instead", "new direction"]
