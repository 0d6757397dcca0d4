"""`openvaala/query` end to end: the real openvaala-lsp and runtime host, a scripted model server,
real DuckDB. Queries read what turns wrote, refuse writes, and stop when cancelled."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import TIMEOUT, LspClient, ResponseError
from processes import alive
from turn_helpers import STANDALONE, USAGE, Session, start

FOREVER = "SELECT count(*) FROM range(1000000000000000)"  # never ends on its own
QUERY_THREADS = 2  # the runtime's query threads: occupying both shows whether a cancelled query let go


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


async def query(lsp: LspClient, sql: str, *parameters: Any, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sql": sql, **extra}
    if parameters:
        params["parameters"] = list(parameters)
    result: dict[str, Any] = await lsp.call("query", params)
    return result


async def invalid(lsp: LspClient, params: dict[str, Any]) -> list[str]:
    with pytest.raises(ResponseError) as caught:
        await lsp.call("query", params)
    assert caught.value.code == -32602 and caught.value.kind == "invalidParams"
    errors: list[str] = caught.value.data["errors"]
    return errors


async def until(predicate: Any, what: str) -> None:
    try:
        async with asyncio.timeout(TIMEOUT):
            while not predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"timed out waiting until {what}")


async def test_query_reads_the_token_usage_of_a_real_turn(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("Hello ", "there.").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("hi")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"

    calls = await query(
        agent,
        "SELECT provider, model, input_tokens, cached_input_tokens, output_tokens, total_tokens, turn_id, started_at"
        " FROM model_calls WHERE conversation_id = ?",
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

    by_day = await query(
        agent, "SELECT day, provider, model, calls, input_tokens, output_tokens FROM usage_by_model_day"
    )
    assert by_day["rows"] == [[started_at[:10], "fake", "fake-model", 1, usage["inputTokens"], usage["outputTokens"]]]

    items = await query(
        agent, "SELECT type, payload FROM items WHERE conversation_id = $1 ORDER BY ordinal", session.id, limit=1
    )
    assert items["truncated"] is True  # a user message and an answer; one asked for
    [[kind, payload]] = items["rows"]
    assert kind == "userMessage" and isinstance(payload, dict)  # a JSON column arrives as JSON


async def test_a_query_answers_while_a_turn_streams(agent: LspClient, provider: FakeProviderServer) -> None:
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


async def test_writes_and_bad_params_are_invalid_params_naming_the_field(client: LspClient) -> None:
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


async def test_cancel_request_interrupts_long_queries(client: LspClient) -> None:
    sent = [await client.send_request("openvaala/query", {"sql": FOREVER}) for _ in range(QUERY_THREADS)]
    for msg_id, _ in sent:
        await client.notify("$/cancelRequest", {"id": msg_id})
    for _, answer in sent:
        with pytest.raises(ResponseError) as caught:
            await asyncio.wait_for(answer, TIMEOUT)
        assert caught.value.code == -32800
    # were they still running, this would wait for a free query thread forever
    assert (await query(client, "SELECT 42 AS answer"))["rows"] == [[42]]


async def test_an_editor_leaving_mid_query_interrupts_it(home: Path, workspace: Path) -> None:
    staying = await LspClient.spawn(home, cwd=workspace)
    await staying.initialize([workspace])
    leaving = await LspClient.spawn(home, cwd=workspace)
    await leaving.initialize([workspace])
    for _ in range(QUERY_THREADS):
        await leaving.send_request("openvaala/query", {"sql": FOREVER})
    await leaving.call("isIdle")  # answered after the host has started the queries sent before it
    leaving.kill()
    await leaving.close()
    assert (await query(staying, "SELECT 42 AS answer"))["rows"] == [[42]]
    host = int((home / "run" / "host.pid").read_text())
    assert await staying.shutdown() == 0
    await until(lambda: not alive(host), "the host, idle, stops")


async def test_shutdown_stops_the_runtime_with_a_query_running(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, args=STANDALONE)  # shutdown stops its runtime
    await lsp.initialize([workspace])
    _, answer = await lsp.send_request("openvaala/query", {"sql": FOREVER})
    await query(lsp, "SELECT 1")
    await lsp.request("shutdown")
    with pytest.raises(ResponseError) as caught:
        await asyncio.wait_for(answer, TIMEOUT)
    assert caught.value.kind == "runtimeStopped"
    await lsp.notify("exit")
    assert await lsp.close() == 0
