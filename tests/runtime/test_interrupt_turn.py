"""interruptTurn and `mode: interrupt`: the turn stops at once, keeps what streamed, kills what runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from processes import alive, running_with
from turn_helpers import Session, definitions, text_of


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


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
async def test_interrupt_kills_a_running_command(
    agent: Harness, provider: FakeProviderServer, workspace: Path, sandbox: str
) -> None:
    marker = "300.4242"  # a sleep nothing else runs: found by its command line, inside a PID namespace or not
    command = f"sleep {marker} & echo $! > child.pid; echo $$ > shell.pid; wait"
    await agent.call(
        "setDefinitions", definitions(provider) | {"agents": [{"name": "default", "sandbox": {"mode": sandbox}}]}
    )
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
    assert running_with(marker)
    await agent.call("interruptTurn", {"conversationId": session.id})
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    assert running_with(marker) == [], "the command's processes survived the interrupt"
    if sandbox == "off":  # the pids the shell saw are the machine's
        for pid in [int((workspace / name).read_text()) for name in ("child.pid", "shell.pid")]:
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
