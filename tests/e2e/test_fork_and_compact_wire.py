"""forkConversation and compactContext through the real openvaala-lsp (front and runtime host), with
the scripted model server: what an editor sees on the wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient
from turn_helpers import Session, start, text_of


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


async def test_fork_over_the_wire(agent: LspClient, provider: FakeProviderServer) -> None:
    advertised = agent.initialized["capabilities"]["experimental"]["openvaala"]["methods"]
    assert {"openvaala/forkConversation", "openvaala/compactContext"} <= set(advertised)
    session = await Session.open(agent)
    for n in (1, 2):
        provider.enqueue("openai-chat", ChatStream().text(f"a{n}").finish().response())
        await session.submit(f"q{n}")
        await session.turn_completed(n)
    turns = (await agent.call("listTurns", {"conversationId": session.id}))["items"]
    fork = await agent.call("forkConversation", {"conversationId": session.id, "lastTurnId": turns[0]["id"]})
    assert fork["forkedFrom"] == {"conversationId": session.id, "turnId": turns[0]["id"]}
    forked = await Session.open(agent, fork["id"])
    assert [text_of(i) for i in await forked.items()] == ["q1", "a1"]
    provider.enqueue("openai-chat", ChatStream().text("fork says hi").finish().response())
    await forked.submit("q-fork")
    assert (await forked.turn_completed())["status"] == "completed"
    assert [text_of(i) for i in await session.items()] == ["q1", "a1", "q2", "a2"]


async def test_compaction_over_the_wire(agent: LspClient, provider: FakeProviderServer) -> None:
    session = await Session.open(agent)
    for n in (1, 2):
        long_answer = f"answer {n} " + "x" * 4000  # big enough that the hand-off is smaller
        provider.enqueue("openai-chat", ChatStream().text(long_answer).finish().response())
        await session.submit(f"question {n}")
        await session.turn_completed(n)
    provider.enqueue("openai-chat", ChatStream().text("## Goal\nKeep going.").finish().response())
    started = await agent.call("compactContext", {"conversationId": session.id})
    turn = await session.turn_completed(3)
    assert turn["id"] == started["turnId"] and turn["status"] == "completed"
    kinds = [e["type"] for e in session.events()]
    assert kinds.index("compactionStarted") < kinds.index("compactionCompleted")
    done = next(e for e in session.events() if e["type"] == "compactionCompleted")
    assert done["turnId"] == turn["id"] and done["after"]["tokens"] < done["before"]["tokens"]
    assert (await session.items())[-1]["type"] == "compaction"
    provider.enqueue("openai-chat", ChatStream().text("answer 3").finish().response())
    await session.submit("question 3")
    await session.turn_completed(4)
    sent = json.dumps(provider.requests_for("openai-chat")[-1].json["messages"])
    assert "Keep going." in sent and "question 3" in sent and "answer 1" not in sent
