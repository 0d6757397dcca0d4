"""Sub-agents: a session of the same conversation runs the task and returns its answer as the tool's
result; its usage rolls up into the parent's totals (and SQL's sessions_tree); interrupting the
parent interrupts it; its failure is an error result the parent's model reads and goes on from."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fake_provider import ChatStream, FakeProviderServer, insufficient_quota
from harness import Harness
from turn_helpers import Session, definitions, text_of

AGENTS: list[dict[str, Any]] = [
    {"name": "lead", "subAgents": ["researcher", "nobody"], "tools": ["read_file"]},
    {"name": "researcher", "description": "finds facts", "instructions": "You research.", "tools": []},
]


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def delegate(task: str, call_id: str = "c1") -> Any:
    arguments = json.dumps({"agent": "researcher", "task": task})
    return ChatStream().tool_call(call_id, "subagent", [arguments]).finish(usage=usage(100, 10)).response()


async def lead(agent: Harness, provider: FakeProviderServer) -> Session:
    await agent.call("setDefinitions", {**definitions(provider), "agents": AGENTS})
    conversation = await agent.call("createConversation", {"agentName": "lead"})
    return await Session.open(agent, conversation["id"])


async def test_a_sub_agent_runs_the_task_in_its_own_session(agent: Harness, provider: FakeProviderServer) -> None:
    session = await lead(agent, provider)
    watched = await agent.call("subscribeConversation", {"conversationId": session.id})
    provider.enqueue(
        "openai-chat",
        delegate("What is the answer? Look it up."),
        ChatStream().text("The answer is 42.").finish(usage=usage(50, 5)).response(),
        ChatStream().text("It is 42.").finish(usage=usage(200, 20)).response(),
    )
    await session.submit("find the answer")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"

    # the tool was offered with the known sub-agents only, and its result is the sub-agent's answer
    first = provider.requests_for("openai-chat")[0].json
    [tool] = [t for t in first["tools"] if t["function"]["name"] == "subagent"]
    assert tool["function"]["parameters"]["properties"]["agent"]["enum"] == ["researcher"]
    result = next(i for i in await session.items() if i["type"] == "toolResult")
    assert text_of(result) == "The answer is 42." and result["toolResult"]["isError"] is False
    child_request = provider.requests_for("openai-chat")[1].json
    assert child_request["messages"][0]["content"].startswith("You research.") and "tools" not in child_request

    sessions = (await agent.call("listSessions", {"conversationId": session.id}))["items"]
    child = next(s for s in sessions if s["id"] != session.session_id)
    assert child["parentSessionId"] == session.session_id and child["agentName"] == "researcher"
    added = await agent.wait_for(
        lambda m: m["method"] == "openvaala/conversationEvent" and m["params"]["event"]["type"] == "sessionAdded"
    )
    assert added["params"]["subscriptionId"] == watched["subscriptionId"]
    assert added["params"]["event"]["session"]["id"] == child["id"]
    items = (await agent.call("listItems", {"conversationId": session.id, "sessionId": child["id"]}))["items"]
    assert [logged["item"]["type"] for logged in items] == ["userMessage", "assistantMessage"]
    assert items[0]["item"]["from"] == {"kind": "session", "sessionId": session.session_id}
    child_turns = (await agent.call("listTurns", {"conversationId": session.id, "sessionId": child["id"]}))["items"]
    assert [t["status"] for t in child_turns] == ["completed"]

    # usage rolls up: the parent's turn holds the sub-agent's, and the session's totals agree with SQL
    assert turn["usage"]["totalTokens"] == 110 + 55 + 220
    async with asyncio.timeout(10):  # the title's call (after the turn) counts for the session too
        while not provider.titles or not (await agent.call("getConversation", {"conversationId": session.id}))["title"]:
            await asyncio.sleep(0.02)
    details = await agent.call("getSessionDetails", {"conversationId": session.id, "sessionId": session.session_id})
    tree = await agent.call(
        "query",
        {
            "sql": "SELECT sessions, calls, total_tokens FROM sessions_tree WHERE session_id = ?",
            "parameters": [session.session_id],
        },
    )
    [[sessions_count, calls, total]] = tree["rows"]
    assert (sessions_count, calls) == (2, 4)  # three turn calls and the title
    assert details["info"]["usage"]["totalTokens"] == total > 385


async def test_interrupting_the_parent_interrupts_the_sub_agent(agent: Harness, provider: FakeProviderServer) -> None:
    session = await lead(agent, provider)
    provider.enqueue("openai-chat", delegate("take your time"), ChatStream().text("thinking ").response(ending="hang"))
    await session.submit("go")
    async with asyncio.timeout(10):
        while len(provider.requests_for("openai-chat")) < 2:
            await asyncio.sleep(0.02)
    # the parent's turn alone is interrupted (as when its task is cancelled): the child follows
    opened = agent.runtime.state.open[session.id]
    opened.runners[session.session_id].interrupt()
    assert (await session.turn_completed())["status"] == "interrupted"
    child = next(r for sid, r in opened.runners.items() if sid != session.session_id)
    async with asyncio.timeout(10):
        while child.active is not None:
            await asyncio.sleep(0.02)
    assert child.last_turn is not None and child.last_turn.status == "interrupted"
    request = provider.requests_for("openai-chat")[1]
    assert await asyncio.to_thread(request.finished.wait, 10) and request.outcome == "disconnected"


async def test_a_failing_sub_agent_is_an_error_result_the_parent_reads(
    agent: Harness, provider: FakeProviderServer
) -> None:
    session = await lead(agent, provider)
    provider.enqueue(
        "openai-chat",
        delegate("fail please"),
        insufficient_quota("openai-chat"),
        ChatStream().text("The researcher failed; I will answer myself.").finish().response(),
    )
    await session.submit("go")
    assert (await session.turn_completed())["status"] == "completed"
    result = next(i for i in await session.items() if i["type"] == "toolResult")
    assert result["toolResult"]["isError"] is True
    assert "researcher failed" in text_of(result) and "insufficientQuota" in text_of(result)
    fed_back = provider.requests_for("openai-chat")[2].json["messages"]
    assert "insufficientQuota" in json.dumps(fed_back)
