"""Compaction, manual (compactContext) and automatic: the request the model receives afterwards holds
the hand-off and the recent user messages and not what left the context; a threshold crossing
compacts once per turn, pruning old tool outputs when that is enough; a context-length error gets one
compaction and one retry; a failing hand-off leaves the history untouched; preCompact hooks block it;
context usage before and after is reported."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer, error_response, insufficient_quota
from harness import Harness, ResponseError
from turn_helpers import Session, definitions, text_of

from openvaala_lsp.runtime.compaction import HANDOFF_INSTRUCTIONS, RECENT_HEADER, SUMMARY_HEADER
from openvaala_lsp.runtime.context import PRUNED_TEXT, estimate_json
from openvaala_lsp.wire.compact_json import dumps as json_body

HANDOFF = "## Goal\nShip the parser.\n## Current state and next step\nWrite the tests."
HANDED = "Ship the parser."  # a line of the hand-off, as it reads inside a JSON dump


def usage(prompt: int, completion: int = 10) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def system_of(request: Any) -> str:
    messages = request.json["messages"]
    return str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""


def handoffs(provider: FakeProviderServer) -> list[Any]:
    return [r for r in provider.requests_for("openai-chat") if system_of(r).startswith(HANDOFF_INSTRUCTIONS[:60])]


def turn_requests(provider: FakeProviderServer) -> list[Any]:
    return [r for r in provider.requests_for("openai-chat") if not system_of(r).startswith(HANDOFF_INSTRUCTIONS[:60])]


def said(request: Any) -> str:
    """Everything the request carries, as text."""
    return json.dumps(request.json["messages"])


async def configure(agent: Harness, provider: FakeProviderServer, *, window: int, **agent_fields: Any) -> None:
    [model] = definitions(provider)["models"]
    agents = [{"name": "coder", "tools": ["shell"], **agent_fields}]
    await agent.call("setDefinitions", {"models": [{**model, "contextWindow": window}], "agents": agents})


async def turn(
    session: Session, provider: FakeProviderServer, text: str, *responses: Any, count: int
) -> dict[str, Any]:
    provider.enqueue("openai-chat", *responses)
    await session.submit(text)
    return await session.turn_completed(count)


async def test_compact_context_writes_a_hand_off_the_next_request_starts_from(
    agent: Harness, provider: FakeProviderServer
) -> None:
    await configure(agent, provider, window=100_000)
    session = await Session.open(agent)
    for n in (1, 2, 3):
        answer = ChatStream().text(f"answer {n} " + "x" * 400).finish(usage=usage(1000 * n)).response()
        await turn(session, provider, f"question {n}", answer, count=n)
    before = await agent.call("getSessionContextUsage", {"conversationId": session.id, "sessionId": session.session_id})

    watched = await agent.call("subscribeConversation", {"conversationId": session.id})
    provider.enqueue("openai-chat", ChatStream().text(HANDOFF).finish(usage=usage(3000, 50)).response())
    started = await agent.call("compactContext", {"conversationId": session.id})
    compaction_turn = await session.turn_completed(4)
    assert compaction_turn["id"] == started["turnId"] and compaction_turn["status"] == "completed"
    events = [e for e in session.events() if e.get("turnId") == started["turnId"] or e["type"] == "stateChanged"]
    assert [e["type"] for e in events if e["type"].startswith("compaction")] == [
        "compactionStarted",
        "compactionCompleted",
    ]
    assert "compacting" in [e["state"] for e in session.events() if e["type"] == "stateChanged"]
    done = next(e for e in session.events() if e["type"] == "compactionCompleted")
    # before: what the last call reported (nothing was added since); after: an estimate of what is left
    assert done["before"] == {"source": "actual", "tokens": 3010, "window": 100_000}
    assert done["after"]["source"] == "estimated" and done["after"]["tokens"] < 3010
    # an editor's other subscription hears the same size: every sessionUpdated from the end of the
    # compaction on (running again, then idle) carries the size after it, whichever arrives first
    infos = [
        n["event"]["info"]
        for n in agent.of("openvaala/conversationEvent", watched["subscriptionId"])
        if n["event"]["type"] == "sessionUpdated"
    ]
    states = [info["state"] for info in infos]
    assert "compacting" in states
    assert all(info["context"] == done["after"] for info in infos[states.index("compacting") + 1 :]), infos

    # the log keeps everything, and the compaction item says what it did
    items = await session.items()
    assert [i["type"] for i in items][-1] == "compaction" and len(items) == 7
    compaction = items[-1]
    assert compaction["compaction"]["trigger"] == "manual" and compaction["compaction"]["summarized"] is True
    text = text_of(compaction)
    assert text.startswith(SUMMARY_HEADER) and HANDOFF in text
    assert RECENT_HEADER in text and all(f"> question {n}" in text for n in (1, 2, 3))  # verbatim, by the runtime
    # the hand-off was asked of the session's model with the whole context, and accounted to the turn
    [asked] = handoffs(provider)
    assert "answer 3" in said(asked) and not asked.json.get("tools")
    assert compaction_turn["usage"]["totalTokens"] == 3050

    after = await agent.call("getSessionContextUsage", {"conversationId": session.id, "sessionId": session.session_id})
    assert [entry["itemId"] for entry in after["items"]] == [compaction["id"]]
    assert after["nextRequest"]["source"] == "estimated"
    assert after["nextRequest"]["tokens"] < before["nextRequest"]["tokens"]

    await turn(session, provider, "question 4", ChatStream().text("answer 4").finish().response(), count=5)
    request = turn_requests(provider)[-1]
    assert HANDED in said(request) and "question 4" in said(request)
    assert "answer 1" not in said(request) and "answer 3" not in said(request)  # left the context
    calls = await agent.call(
        "query", {"sql": "SELECT purpose, count(*) FROM model_calls GROUP BY ALL ORDER BY purpose"}
    )
    assert calls["rows"] == [["compaction", 1], ["title", 1], ["turn", 4]]


async def test_a_threshold_crossing_prunes_old_tool_outputs_when_that_is_enough(
    agent: Harness, provider: FakeProviderServer
) -> None:
    await configure(agent, provider, window=10_000)  # threshold 8500; pruning must reach 6375
    session = await Session.open(agent)
    big = "printf 'line of output %.0s\\n' $(seq 1 800)"  # 12.8 kB: 3200 tokens
    for n in (1, 2, 3):
        await turn(
            session,
            provider,
            f"run it {n}",
            ChatStream()
            .tool_call(f"c{n}", "shell", [json.dumps({"command": big})])
            .finish(usage=usage(1000))
            .response(),
            ChatStream().text(f"ran {n}").finish(usage=usage(2000 * n)).response(),
            count=n,
        )
    # the last call said 6010 tokens; the question adds 2600: over the threshold. Clearing the two
    # older outputs (the newest is in the last two user turns) brings it well under.
    await turn(session, provider, "and now? " + "y" * 10_400, ChatStream().text("fine").finish().response(), count=4)
    assert handoffs(provider) == []  # pruning was enough: no hand-off call
    compaction = next(i for i in await session.items() if i["type"] == "compaction")
    assert compaction["compaction"]["summarized"] is False and compaction["compaction"]["trigger"] == "auto"
    results = [i for i in await session.items() if i["type"] == "toolResult"]
    assert compaction["compaction"]["prunedItemIds"] == [results[0]["id"], results[1]["id"]]
    request = turn_requests(provider)[-1]
    assert PRUNED_TEXT in said(request) and said(request).count("line of output") > 0  # newest outputs kept
    assert "ran 1" in said(request)  # pruning keeps the calls and every message


async def test_a_threshold_crossing_without_tool_outputs_writes_a_hand_off_once_per_turn(
    agent: Harness, provider: FakeProviderServer
) -> None:
    await configure(agent, provider, window=10_000)
    session = await Session.open(agent)
    await turn(
        session, provider, "q1 " + "z" * 20_000, ChatStream().text("a1").finish(usage=usage(8600)).response(), count=1
    )
    provider.enqueue(
        "openai-chat",
        ChatStream().text(HANDOFF).finish().response(),
        # the turn goes on with tool rounds still past the threshold: no second compaction
        ChatStream().tool_call("c1", "shell", ['{"command": "echo one"}']).finish(usage=usage(9000)).response(),
        ChatStream().tool_call("c2", "shell", ['{"command": "echo two"}']).finish(usage=usage(9500)).response(),
        ChatStream().text("done").finish(usage=usage(9900)).response(),
    )
    await session.submit("q2")
    assert (await session.turn_completed(2))["status"] == "completed"
    assert len(handoffs(provider)) == 1
    assert [i["compaction"]["trigger"] for i in await session.items() if i["type"] == "compaction"] == ["auto"]
    first_after = turn_requests(provider)[1]
    assert HANDED in said(first_after) and "q2" in said(first_after) and "a1" not in said(first_after)


async def test_a_context_length_error_gets_one_compaction_and_one_retry(
    agent: Harness, provider: FakeProviderServer
) -> None:
    await configure(agent, provider, window=100_000)
    session = await Session.open(agent)
    await turn(session, provider, "q1", ChatStream().text("a1").finish().response(), count=1)
    overflow = error_response("openai-chat", 400, "maximum context length exceeded", code="context_length_exceeded")
    provider.enqueue("openai-chat", overflow, ChatStream().text(HANDOFF).finish().response())
    provider.enqueue("openai-chat", ChatStream().text("a2 after compaction").finish().response())
    await session.submit("q2")
    assert (await session.turn_completed(2))["status"] == "completed"
    compaction = next(i for i in await session.items() if i["type"] == "compaction")
    assert compaction["compaction"]["trigger"] == "overflow"
    assert text_of((await session.items())[-1]) == "a2 after compaction"
    # a second overflow in the same turn fails it, clearly, without a loop
    provider.enqueue("openai-chat", overflow, ChatStream().text(HANDOFF).finish().response(), overflow)
    await session.submit("q3")
    failed = await session.turn_completed(3)
    assert failed["status"] == "failed" and failed["error"]["kind"] == "contextLengthExceeded"
    assert len(handoffs(provider)) == 2


async def test_a_failing_hand_off_leaves_the_history_untouched(agent: Harness, provider: FakeProviderServer) -> None:
    await configure(agent, provider, window=10_000)
    session = await Session.open(agent)
    await turn(
        session, provider, "q1 " + "z" * 20_000, ChatStream().text("a1").finish(usage=usage(8600)).response(), count=1
    )
    before = await session.items()
    # automatic: the hand-off fails, the turn goes on with the full history and says why
    provider.enqueue("openai-chat", insufficient_quota("openai-chat"), ChatStream().text("a2").finish().response())
    await session.submit("q2")
    assert (await session.turn_completed(2))["status"] == "completed"
    assert [i["type"] for i in await session.items()] == [i["type"] for i in before] + [
        "userMessage",
        "assistantMessage",
    ]
    error = next(e for e in session.events() if e["type"] == "error")
    assert error["error"]["kind"] == "insufficientQuota" and "history is unchanged" in error["error"]["message"]
    assert "a1" in said(turn_requests(provider)[-1])
    # manual: the compaction turn fails, nothing is written
    provider.enqueue("openai-chat", ChatStream().text("   ").finish().response())  # an empty hand-off
    await agent.call("compactContext", {"conversationId": session.id})
    failed = await session.turn_completed(3)
    assert failed["status"] == "failed" and failed["error"]["kind"] == "compactionFailed"
    assert not [i for i in await session.items() if i["type"] == "compaction"]


async def test_pre_compact_hooks_can_block_it(agent: Harness, provider: FakeProviderServer) -> None:
    [model] = definitions(provider)["models"]
    hook = {"name": "keep-all", "event": "preCompact", "command": "echo 'we keep everything' >&2; exit 2"}
    await agent.call("setDefinitions", {"models": [{**model, "contextWindow": 10_000}], "hooks": [hook]})
    session = await Session.open(agent)
    await turn(
        session, provider, "q1 " + "z" * 20_000, ChatStream().text("a1").finish(usage=usage(8600)).response(), count=1
    )
    await turn(session, provider, "q2", ChatStream().text("a2").finish().response(), count=2)  # auto: blocked, goes on
    assert handoffs(provider) == [] and not [i for i in await session.items() if i["type"] == "compaction"]
    await agent.call("compactContext", {"conversationId": session.id})
    blocked = await session.turn_completed(3)
    assert blocked["status"] == "failed" and blocked["error"] == {
        "kind": "hookBlocked",
        "message": "we keep everything",
    }


async def test_compact_context_refuses_while_a_turn_runs(agent: Harness, provider: FakeProviderServer) -> None:
    session = await Session.open(agent)
    provider.enqueue("openai-chat", ChatStream().text("slow").response(ending="hang"))
    await session.submit("go")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    with pytest.raises(ResponseError) as err:
        await agent.call("compactContext", {"conversationId": session.id})
    assert err.value.kind == "invalidState"
    await agent.call("interruptTurn", {"conversationId": session.id})
    with pytest.raises(ResponseError) as err:
        await agent.call("compactContext", {"conversationId": "conv_missing"})
    assert err.value.kind == "conversationNotFound"


def test_json_is_estimated_as_a_request_carries_it() -> None:
    schema = {"name": "shell", "description": "Runs a command é", "parameters": {"type": "object"}}
    assert estimate_json(schema) == (len(json_body(schema)) + 3) // 4  # compact UTF-8 bytes / 4
    assert estimate_json({"n": 2**70, "s": "lone \ud800"}) > 0  # what orjson refuses is still measured
