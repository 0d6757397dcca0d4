"""`Turn.reason`: every way a turn ends says how, the same in `turnCompleted`, getTurns, listTurns,
the session's runtime info and SQL (`turns_v.reason`): the model's answer (completed, or cut at its
output limit), the user's interrupt, the runtime stopping, a model error (its kind in `error`), a
hook that blocked or stopped the turn, and the stop hook's continuation limit."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from fake_provider import ChatStream, FakeProviderServer, error_response
from harness import Harness
from turn_helpers import API_KEY, Session, definitions, query, text_of

from openvaala_lsp.model import Order
from openvaala_lsp.runtime.turns import MAX_STOP_CONTINUATIONS
from openvaala_lsp.storage.duckdb_store import DuckDBStorage


async def ended_as(agent: Harness, session: Session, turn: dict[str, Any], status: str, reason: str) -> None:
    """The turn ended with `status` and `reason`, and every view of it says so."""
    assert (turn["status"], turn.get("reason")) == (status, reason), turn
    conversation = {"conversationId": session.id}
    [got] = (await agent.call("getTurns", {**conversation, "turnIds": [turn["id"]]}))["turns"]
    listed = next(t for t in (await agent.call("listTurns", conversation))["items"] if t["id"] == turn["id"])
    assert got == listed == turn
    details = await agent.call("getSessionDetails", {**conversation, "sessionId": session.session_id})
    assert (details["info"]["lastTurnId"], details["info"]["lastTurnReason"]) == (turn["id"], reason)
    found = await query(agent, "SELECT status, reason, error_kind FROM turns_v WHERE turn_id = ?", turn["id"])
    assert found["rows"] == [[status, reason, (turn.get("error") or {}).get("kind")]]


async def test_an_answer_completes_the_turn(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("done").finish().response())
    session = await Session.open(agent)
    await session.submit("hi")
    await ended_as(agent, session, await session.turn_completed(), "completed", "completed")


async def test_an_answer_cut_at_the_output_limit_is_max_tokens(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("a long answer that sto").finish("length").response())
    session = await Session.open(agent)
    await session.submit("write a lot")
    await ended_as(agent, session, await session.turn_completed(), "completed", "maxTokens")
    assert text_of((await session.items())[-1]) == "a long answer that sto"  # what came is kept


async def test_the_users_interrupt_is_user_interrupt(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("partial").pause(30).finish().response(),
        ChatStream().text("second").pause(30).finish().response(),
        ChatStream().text("ok").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    await agent.call("interruptTurn", {"conversationId": session.id})
    await ended_as(agent, session, await session.turn_completed(1), "interrupted", "userInterrupt")
    await session.submit("second")
    await session.wait_event(lambda e: e["type"] == "itemDelta" and e["delta"] == "second")
    await session.submit("instead", mode="interrupt")  # an input that interrupts: the user's too
    second = await session.turn_completed(2)
    assert (second["status"], second["reason"]) == ("interrupted", "userInterrupt")
    await ended_as(agent, session, await session.turn_completed(3), "completed", "completed")


async def test_a_model_error_is_model_error_with_its_kind(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", error_response("openai-chat", 401, "Incorrect API key provided"))
    session = await Session.open(agent)
    await session.submit("hi")
    turn = await session.turn_completed()
    assert turn["error"]["kind"] == "authentication"
    await ended_as(agent, session, turn, "failed", "modelError")


async def test_a_prompt_a_hook_blocks_is_cancelled_by_hook(agent: Harness, provider: FakeProviderServer) -> None:
    hook = {"name": "no", "event": "userPromptSubmit", "command": "echo 'not today' >&2; exit 2"}
    await agent.call("setDefinitions", {**definitions(provider), "hooks": [hook]})
    session = await Session.open(agent)
    await session.submit("hi")
    turn = await session.turn_completed()
    assert turn["error"] == {"kind": "hookBlocked", "message": "not today"}
    await ended_as(agent, session, turn, "failed", "cancelledByHook")
    assert provider.requests_for("openai-chat") == []


async def test_a_hook_that_stops_the_agent_is_cancelled_by_hook(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    hook = {"name": "halt", "event": "postToolUse", "command": """echo '{"continue": false}'"""}
    await agent.call("setDefinitions", {**definitions(provider), "hooks": [hook]})
    (workspace / "a.txt").write_text("A\n")
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "read_file", ['{"path": "a.txt"}']).finish().response(),
        ChatStream().text("never asked").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("read it")
    await ended_as(agent, session, await session.turn_completed(), "completed", "cancelledByHook")
    assert len(provider.requests_for("openai-chat")) == 1  # the agent stopped after the tool


async def test_a_stop_hook_that_never_lets_go_reaches_the_limit(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    hook = {"name": "again", "event": "stop", "command": f'{sys.executable} -c "import sys; sys.exit(2)"'}
    await agent.call("setDefinitions", {**definitions(provider), "hooks": [hook]})
    provider.set_default("openai-chat", ChatStream().text("still here").finish().response())
    session = await Session.open(agent)
    await session.submit("go")
    await ended_as(agent, session, await session.turn_completed(), "completed", "limitReached")
    assert len(provider.requests_for("openai-chat")) == MAX_STOP_CONTINUATIONS + 1


async def test_a_stopping_runtime_is_runtime_stopped(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    """The runtime stops mid-answer (a shutdown): the turn and its partial answer are saved so."""
    agent = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    await agent.call("setDefinitions", definitions(provider))
    provider.enqueue("openai-chat", ChatStream().text("half an ", "answer").pause(30).finish().response())
    session = await Session.open(agent)
    await session.submit("hi")
    await session.wait_event(lambda e: e["type"] == "itemDelta" and e["delta"] == "answer")
    stopping = asyncio.ensure_future(agent.stop())
    turn = await session.turn_completed()
    await stopping
    assert (turn["status"], turn["reason"]) == ("interrupted", "runtimeStopped")
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    try:
        [saved] = await storage.get_turns(session.id, [turn["id"]])
        assert (saved.status.value, saved.reason) == ("interrupted", "runtimeStopped")
        assert await storage.interrupt_running_turns(saved.started_at) == []  # nothing left running
        page = await storage.list_items(session.id, session_id=None, cursor=None, limit=10, order=Order.ASC)
        answer = page.items[-1].item
        assert (answer.type.value, answer.status.value) == ("assistantMessage", "interrupted")
        assert answer.content is not None and answer.content[0].text == "half an answer"
    finally:
        await storage.close()
