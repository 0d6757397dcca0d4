"""openvaala/query on the runtime's history: it reads what turns wrote, while they run, and refuses writes."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import USAGE, Session, query


async def invalid(lsp: Harness, params: dict[str, Any]) -> list[str]:
    with pytest.raises(ResponseError) as caught:
        await lsp.call("query", params)
    assert caught.value.code == -32602 and caught.value.kind == "invalidParams"
    errors: list[str] = caught.value.data["errors"]
    return errors


async def test_query_reads_the_token_usage_of_a_real_turn(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("Hello ", "there.").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("hi")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"

    calls = await query(
        agent,
        "SELECT provider, model, input_tokens, cached_input_tokens, output_tokens, total_tokens, turn_id, started_at"
        " FROM model_calls WHERE conversation_id = ? AND purpose = 'turn'",
        session.id,
    )
    assert [c["name"] for c in calls["columns"]][:2] == ["provider", "model"]
    assert [c["type"] for c in calls["columns"]] == ["VARCHAR"] * 2 + ["BIGINT"] * 4 + [
        "VARCHAR",
        "TIMESTAMP WITH TIME ZONE",
    ]
    assert calls["truncated"] is False and len(calls["rows"]) == 1
    usage = turn["usage"]
    expected = [usage["inputTokens"], usage["cachedInputTokens"], usage["outputTokens"], usage["totalTokens"]]
    provider_name, model, *tokens, turn_id, started_at = calls["rows"][0]
    assert (provider_name, model, tokens, turn_id) == ("fake", "fake-model", expected, turn["id"])
    assert started_at.endswith("Z") and dt.datetime.fromisoformat(started_at).tzinfo is not None

    async with asyncio.timeout(10):  # the title's call, made after the turn, counts too
        while not (await agent.call("getConversation", {"conversationId": session.id}))["title"]:
            await asyncio.sleep(0.02)
    title = await query(agent, "SELECT input_tokens, output_tokens FROM model_calls WHERE purpose = 'title'")
    [[title_in, title_out]] = title["rows"]
    by_day = await query(
        agent, "SELECT day, provider, model, calls, input_tokens, output_tokens FROM usage_by_model_day"
    )
    per_day = [
        started_at[:10],
        "fake",
        "fake-model",
        2,
        usage["inputTokens"] + title_in,
        usage["outputTokens"] + title_out,
    ]
    assert by_day["rows"] == [per_day]

    items = await query(
        agent, "SELECT type, payload FROM items WHERE conversation_id = $1 ORDER BY ordinal", session.id, limit=1
    )
    assert items["truncated"] is True  # a user message and an answer; one asked for
    [[kind, payload]] = items["rows"]
    assert kind == "userMessage" and isinstance(payload, dict)  # a JSON column arrives as JSON


async def test_a_query_answers_while_a_turn_streams(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("Still ", "thinking").response(ending="hang"))
    session = await Session.open(agent)
    await session.submit("think")
    await session.wait_event(lambda e: e["type"] == "itemDelta")  # the model is mid-answer and stays so
    running = await query(agent, "SELECT status FROM turns WHERE conversation_id = ?", session.id)
    assert running["rows"] == [["running"]]
    await agent.call("interruptTurn", {"conversationId": session.id})
    assert (await session.turn_completed())["status"] == "interrupted"
    ended = await query(agent, "SELECT status FROM turns WHERE conversation_id = ?", session.id)
    assert ended["rows"] == [["interrupted"]]


async def test_writes_and_bad_params_are_invalid_params_naming_the_field(client: Harness) -> None:
    conversation = await client.call("createConversation")
    read_only = "only read-only statements run here"
    for sql in ("DELETE FROM conversations", "DROP TABLE items", "ATTACH 'x.duckdb'", "COPY items TO 'x.csv'"):
        [error] = await invalid(client, {"sql": sql})
        assert read_only in error and error.endswith(" @ $.sql")
    [error] = await invalid(client, {"sql": "SELECT 1; DELETE FROM conversations"})
    assert error == "one statement at a time: found 2 @ $.sql"
    [error] = await invalid(client, {"sql": "SELEC 1"})
    assert error.startswith('Parser Error: syntax error at or near "SELEC"') and error.endswith(" @ $.sql")
    [error] = await invalid(client, {"sql": "SELECT * FROM read_csv('/etc/passwd')"})
    assert "disabled by configuration" in error
    [error] = await invalid(client, {"sql": "SELECT ?", "parameters": []})
    assert error == "the statement takes 1 parameters, got 0 @ $.parameters"
    assert await invalid(client, {"sql": "SELECT 1", "limit": 0}) == ["must be between 1 and 100000 @ $.limit"]
    assert await invalid(client, {"sql": "SELECT 1", "limit": 100001}) == ["must be between 1 and 100000 @ $.limit"]
    not_a_list = await invalid(client, {"sql": "SELECT 1", "parameters": "x"})
    assert not_a_list == ["expected array, got string @ $.parameters"]
    assert await invalid(client, {"parameters": []}) == ["required field missing @ $.sql"]
    assert (await query(client, "SELECT id FROM conversations"))["rows"] == [[conversation["id"]]]
