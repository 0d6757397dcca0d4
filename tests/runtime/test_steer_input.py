"""steerInput and `mode: steer`: an input delivered into the running turn at its next model call."""

from __future__ import annotations

from typing import Any

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import Session


async def test_steer_reaches_the_next_model_call(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("working").pause(1.0).tool_call("c1", "glob", ['{"pattern": "*"}']).finish().response(),
        ChatStream().text("steered").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    steer_id = await session.submit("also do this", mode="steer")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"
    items = await session.items()
    steered = next(item for item in items if item["id"] == steer_id)
    assert steered["turnId"] == turn["id"]
    second = provider.requests_for("openai-chat")[1].json["messages"]
    assert second[-1] == {"role": "user", "content": "also do this"} or text_of_message(second[-1]) == "also do this"
    removed = [e for e in session.events() if e["type"] == "pendingInputRemoved"]
    assert {"itemId": steer_id, "reason": "taken", "type": "pendingInputRemoved"} in removed
    assert len([e for e in session.events() if e["type"] == "turnStarted"]) == 1


def text_of_message(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)
