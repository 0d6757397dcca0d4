"""forkConversation at every boundary (before the first turn, in the middle, after the last, a source
mid-turn), its options (model, executor settings, environment), its errors, and the independence of
the fork and its source afterwards."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import API_KEY, Session, definitions, text_of


async def three_turns(agent: Harness, provider: FakeProviderServer) -> tuple[Session, list[dict[str, Any]]]:
    """A conversation of three finished turns: "q1" "a1", "q2" "a2", "q3" "a3"."""
    session = await Session.open(agent)
    for n in (1, 2, 3):
        provider.enqueue("openai-chat", ChatStream().text(f"a{n}").finish().response())
        await session.submit(f"q{n}")
        assert (await session.turn_completed(n))["status"] == "completed"
    turns = (await agent.call("listTurns", {"conversationId": session.id}))["items"]
    return session, turns


async def texts(agent: Harness, conversation_id: str) -> list[str]:
    page = await agent.call("listItems", {"conversationId": conversation_id, "limit": 500})
    return [text_of(logged["item"]) for logged in page["items"]]


async def test_fork_at_every_boundary(agent: Harness, provider: FakeProviderServer) -> None:
    session, turns = await three_turns(agent, provider)
    cases = [
        ({"beforeTurnId": turns[0]["id"]}, [], None),
        ({"lastTurnId": turns[0]["id"]}, ["q1", "a1"], turns[0]["id"]),
        ({"beforeTurnId": turns[2]["id"]}, ["q1", "a1", "q2", "a2"], turns[1]["id"]),
        ({"lastTurnId": turns[2]["id"]}, ["q1", "a1", "q2", "a2", "q3", "a3"], turns[2]["id"]),
        ({}, ["q1", "a1", "q2", "a2", "q3", "a3"], turns[2]["id"]),
    ]
    source_ids = {
        logged["item"]["id"] for logged in (await agent.call("listItems", {"conversationId": session.id}))["items"]
    }
    for where, expected, last_turn in cases:
        fork = await agent.call("forkConversation", {"conversationId": session.id, **where})
        assert fork["id"] != session.id
        assert fork["forkedFrom"] == {"conversationId": session.id, **({"turnId": last_turn} if last_turn else {})}
        assert await texts(agent, fork["id"]) == expected, where
        assert await agent.call("isConversationOpen", {"conversationId": fork["id"]}) == {"open": True}
        items = (await agent.call("listItems", {"conversationId": fork["id"]}))["items"]
        assert [logged["ordinal"] for logged in items] == list(range(1, len(expected) + 1))
        assert not source_ids & {logged["item"]["id"] for logged in items}  # new ids throughout
        fork_turns = (await agent.call("listTurns", {"conversationId": fork["id"]}))["items"]
        assert len(fork_turns) == len(expected) // 2
        assert not {t["id"] for t in turns} & {t["id"] for t in fork_turns}
        [fork_session] = (await agent.call("listSessions", {"conversationId": fork["id"]}))["items"]
        assert fork_session["id"] != session.session_id
        assert {logged["item"]["sessionId"] for logged in items} <= {fork_session["id"]}
        assert {logged["item"]["turnId"] for logged in items} <= {t["id"] for t in fork_turns}


async def test_a_fork_and_its_source_are_independent(agent: Harness, provider: FakeProviderServer) -> None:
    session, turns = await three_turns(agent, provider)
    fork = await agent.call("forkConversation", {"conversationId": session.id, "lastTurnId": turns[1]["id"]})
    forked = await Session.open(agent, fork["id"])
    provider.enqueue("openai-chat", ChatStream().text("fork answer").finish().response())
    await forked.submit("q-fork")
    assert (await forked.turn_completed())["status"] == "completed"
    # the model saw the copied history, then the new question
    sent = provider.requests_for("openai-chat")[-1].json["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")] == ["q1", "a1", "q2", "a2", "q-fork"]
    assert await texts(agent, fork["id"]) == ["q1", "a1", "q2", "a2", "q-fork", "fork answer"]
    assert await texts(agent, session.id) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    await agent.call("setConversationTitle", {"conversationId": session.id, "title": "source only"})
    assert (await agent.call("getConversation", {"conversationId": fork["id"]}))["title"] == fork["title"] != ""
    await agent.call("deleteConversation", {"conversationId": session.id})
    assert await texts(agent, fork["id"]) == ["q1", "a1", "q2", "a2", "q-fork", "fork answer"]


async def test_a_source_mid_turn_forks_its_completed_turns_only(agent: Harness, provider: FakeProviderServer) -> None:
    session, _ = await three_turns(agent, provider)
    provider.enqueue("openai-chat", ChatStream().text("still ").response(ending="hang"))
    await session.submit("q4")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    queued = await session.submit("q5, queued")
    fork = await agent.call("forkConversation", {"conversationId": session.id})
    assert await texts(agent, fork["id"]) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert len((await agent.call("listTurns", {"conversationId": fork["id"]}))["items"]) == 3
    forked = await Session.open(agent, fork["id"])
    assert forked.snapshot["pendingInputs"] == []  # pending inputs are not copied
    running = next(
        t for t in (await agent.call("listTurns", {"conversationId": session.id}))["items"] if t["status"] == "running"
    )
    with pytest.raises(ResponseError) as err:
        await agent.call("forkConversation", {"conversationId": session.id, "lastTurnId": running["id"]})
    assert err.value.kind == "invalidState"
    await agent.call("withdrawInput", {"conversationId": session.id, "itemId": queued})
    await agent.call("interruptTurn", {"conversationId": session.id})


async def test_a_fork_takes_a_new_model_executor_settings_and_environment(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    [model] = definitions(provider)["models"]
    other = {**model, "ref": {"provider": "fake", "name": "other"}}
    await agent.call("setDefinitions", {"models": [model, other]})
    session, _ = await three_turns(agent, provider)
    fork = await agent.call(
        "forkConversation",
        {
            "conversationId": session.id,
            "model": {"model": other["ref"]},
            "executorSettings": {"directory": "src"},
            "environment": ["ONLY=this", f"FAKE_API_KEY={API_KEY}", f"PATH={os.environ['PATH']}"],
        },
    )
    assert fork["model"] == {"model": {"provider": "fake", "name": "other"}}
    assert fork["executorSettings"]["directory"] == str((workspace / "src").resolve())
    [fork_session] = (await agent.call("listSessions", {"conversationId": fork["id"]}))["items"]
    assert fork_session["model"] == {"model": {"provider": "fake", "name": "other"}}
    forked = await Session.open(agent, fork["id"])
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "shell", ['{"command": "echo $ONLY; pwd"}']).finish().response(),
        ChatStream().text("done").finish().response(),
    )
    await forked.submit("where am I?")
    turn = await forked.turn_completed()
    assert turn["status"] == "completed", turn.get("error")
    assert provider.requests_for("openai-chat")[-1].json["model"] == "other"
    output = next(text_of(i) for i in await forked.items() if i["type"] == "toolResult")
    assert "this" in output and str((workspace / "src").resolve()) in output


async def test_fork_errors_name_the_field(agent: Harness, provider: FakeProviderServer) -> None:
    session, turns = await three_turns(agent, provider)
    for params, kind, path in (
        ({"lastTurnId": "turn_missing"}, "notFound", "$.lastTurnId"),
        ({"beforeTurnId": "turn_missing"}, "notFound", "$.beforeTurnId"),
        ({"lastTurnId": turns[0]["id"], "beforeTurnId": turns[1]["id"]}, "invalidParams", "$.beforeTurnId"),
        ({"model": {"model": {"provider": "x", "name": "y"}}}, "notFound", "$.model.model"),
    ):
        with pytest.raises(ResponseError) as err:
            await agent.call("forkConversation", {"conversationId": session.id, **params})
        assert err.value.kind == kind and path in err.value.message, params
    with pytest.raises(ResponseError) as err:
        await agent.call("forkConversation", {"conversationId": "conv_missing"})
    assert err.value.kind == "conversationNotFound"
