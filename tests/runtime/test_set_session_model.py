"""setSessionModel, and the model a session names (its effective model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import Session, definitions


async def test_a_session_names_the_model_it_uses(home: Path, workspace: Path) -> None:
    """Session.model is the effective model: the agent's default, else the first configured model,
    and after setSessionModel with no model, the default again."""
    models = [
        {
            "ref": {"provider": "p", "name": "first"},
            "api": "openai-chat",
            "baseUrl": "http://127.0.0.1:9",
            "contextWindow": 8000,
        },
        {
            "ref": {"provider": "p", "name": "agents"},
            "api": "openai-chat",
            "baseUrl": "http://127.0.0.1:9",
            "contextWindow": 8000,
        },
    ]
    agents = [
        {"name": "plain"},
        {"name": "picky", "defaultModel": {"provider": "p", "name": "agents"}},
    ]
    lsp = await Harness.start(home, [workspace])
    try:
        await lsp.call("setDefinitions", {"models": models, "agents": agents})
        for agent, expected in (("plain", "first"), ("picky", "agents")):
            conversation = await lsp.call("createConversation", {"agentName": agent})
            session = (await lsp.call("listSessions", {"conversationId": conversation["id"]}))["items"][0]
            assert session["model"] == {"model": {"provider": "p", "name": expected}}, agent
            assert (await lsp.call("getSessionById", {"sessionId": session["id"]}))["model"] == session["model"]
        changed = await lsp.call(
            "setSessionModel",
            {"conversationId": conversation["id"], "sessionId": session["id"], "model": {"reasoningEffort": "low"}},
        )
        assert changed["model"] == {"model": {"provider": "p", "name": "agents"}, "reasoningEffort": "low"}
    finally:
        await lsp.stop()


async def test_the_next_turn_uses_the_model_set_for_the_session(agent: Harness, provider: FakeProviderServer) -> None:
    bigger = {
        **definitions(provider)["models"][0],
        "ref": {"provider": "fake", "name": "bigger"},
        "contextWindow": 32000,
    }
    await agent.call("setDefinitions", {"models": [*definitions(provider)["models"], bigger]})
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    session = await Session.open(agent)
    await session.submit("one")
    assert (await session.turn_completed())["model"] == {"provider": "fake", "name": "fake-model"}

    changed = await agent.call(
        "setSessionModel",
        {"conversationId": session.id, "sessionId": session.session_id, "model": {"model": bigger["ref"]}},
    )
    assert changed["model"] == {"model": {"provider": "fake", "name": "bigger"}}
    usage = await agent.call("getSessionContextUsage", {"conversationId": session.id, "sessionId": session.session_id})
    assert usage["window"] == 32000  # window and threshold follow the session's model at once
    await session.submit("two")
    assert (await session.turn_completed(2))["model"] == {"provider": "fake", "name": "bigger"}
    assert [r.json["model"] for r in provider.requests_for("openai-chat")] == ["fake-model", "bigger"]
    with pytest.raises(ResponseError) as err:
        await agent.call(
            "setSessionModel",
            {
                "conversationId": session.id,
                "sessionId": session.session_id,
                "model": {"model": {"provider": "x", "name": "y"}},
            },
        )
    assert err.value.kind == "notFound" and "$.model.model" in err.value.message


async def test_a_model_set_during_a_turn_serves_its_next_model_call(
    agent: Harness, provider: FakeProviderServer
) -> None:
    [model] = definitions(provider)["models"]
    bigger = {**model, "ref": {"provider": "fake", "name": "bigger"}}
    await agent.call("setDefinitions", {"models": [model, bigger]})
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "shell", ['{"command": "sleep 0.5"}']).finish().response(),
        ChatStream().text("done").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("go")
    await session.wait_event(lambda e: e["type"] == "itemStarted" and e["item"]["type"] == "toolResult")
    await agent.call(
        "setSessionModel",
        {"conversationId": session.id, "sessionId": session.session_id, "model": {"model": bigger["ref"]}},
    )
    assert (await session.turn_completed())["status"] == "completed"
    assert [r.json["model"] for r in provider.requests_for("openai-chat")] == ["fake-model", "bigger"]
