"""interruptTurn and `mode: interrupt`: the turn stops at once, keeps what streamed, kills what runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from processes import alive
from turn_helpers import Session, text_of


async def test_interrupt_during_streaming(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat", ChatStream().text("partial ", "answer").pause(30).text(" never").finish().response()
    )
    session = await Session.open(agent)
    await session.submit("go")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    await asyncio.sleep(0.1)
    started = await session.wait_event(lambda e: e["type"] == "turnStarted")
    result = await agent.call("interruptTurn", {"conversationId": session.id})
    assert result == {"turnId": started["turn"]["id"]}
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    items = await session.items()
    assert items[-1]["type"] == "assistantMessage" and items[-1]["status"] == "interrupted"
    assert text_of(items[-1]) == "partial answer"
    request = provider.requests_for("openai-chat")[0]
    assert await asyncio.to_thread(request.finished.wait, 10)
    assert request.outcome == "disconnected"  # the connection was closed at once
    with pytest.raises(ResponseError) as err:
        await agent.call("interruptTurn", {"conversationId": session.id})
    assert err.value.kind == "invalidState"


async def test_interrupt_kills_a_running_command(agent: Harness, provider: FakeProviderServer, workspace: Path) -> None:
    command = "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "shell", [json.dumps({"command": command})]).finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("run it")
    await session.wait_event(lambda e: e["type"] == "itemStarted" and e["item"]["type"] == "toolResult")
    async with asyncio.timeout(10):
        while not (workspace / "child.pid").exists() or not (workspace / "shell.pid").exists():
            await asyncio.sleep(0.02)
    pids = [int((workspace / name).read_text()) for name in ("child.pid", "shell.pid")]
    await agent.call("interruptTurn", {"conversationId": session.id})
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    for pid in pids:
        assert not alive(pid), f"process {pid} survived the interrupt"
    result = (await session.items())[-1]
    assert result["type"] == "toolResult" and result["toolResult"]["isError"] is True
    assert "interrupted" in text_of(result)


async def test_interrupt_mode_submit(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("long").pause(30).finish().response(),
        ChatStream().text("ok").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    await session.submit("stop and do this", mode="interrupt")
    assert (await session.turn_completed(1))["status"] == "interrupted"
    assert (await session.turn_completed(2))["status"] == "completed"
