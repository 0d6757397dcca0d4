"""Usage analytics through the runtime: a model's price reaches each call's row and the cost column,
exportUsage writes Parquet and records its watermark, getSessionContextUsage says what fills the
window, and openvaala/query refuses what could change anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import USAGE, Session, definitions, query

PRICE = {"currency": "EUR", "input": 2.0, "cachedInput": 0.5, "output": 8.0}


def priced(provider: FakeProviderServer, price: dict[str, Any] | None = PRICE) -> dict[str, Any]:
    found = {**definitions(provider), "agents": [{"name": "default", "titles": False}]}  # no title calls
    if price is not None:
        found["models"][0]["price"] = price
    return found


async def test_a_calls_price_is_recorded_with_it_and_gives_its_cost(
    agent: Harness, provider: FakeProviderServer
) -> None:
    await agent.call("setDefinitions", priced(provider))
    provider.enqueue("openai-chat", ChatStream().text("priced").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("hi")
    assert (await session.turn_completed())["status"] == "completed"
    [[currency, cost, window, estimate, unpriced]] = (
        await query(
            agent,
            "SELECT currency, cost, context_window, context_tokens, (SELECT unpriced_calls FROM turns_v)"
            " FROM model_calls_v",
        )
    )["rows"]
    # USAGE: 120 input of which 20 cached, 30 output: 100 x 2 + 20 x 0.5 + 30 x 8 per million
    assert (currency, cost, window, unpriced) == ("EUR", pytest.approx(450 / 1e6), 8000, 0)
    assert estimate > 0
    # a price set later applies to later calls only: history keeps what a call cost when it was made
    await agent.call("setDefinitions", priced(provider, {**PRICE, "input": 100.0}))
    provider.enqueue("openai-chat", ChatStream().text("dearer").finish(usage=USAGE).response())
    await session.submit("again")
    await session.turn_completed(2)
    costs = (await query(agent, "SELECT cost FROM model_calls_v ORDER BY seq"))["rows"]
    assert costs == [[pytest.approx(450 / 1e6)], [pytest.approx((100 * 100 + 10 + 240) / 1e6)]]
    await agent.call("setDefinitions", priced(provider, None))
    provider.enqueue("openai-chat", ChatStream().text("free?").finish(usage=USAGE).response())
    await session.submit("unpriced")
    await session.turn_completed(3)
    [[cost, unpriced]] = (await query(agent, "SELECT cost, unpriced_calls FROM usage_daily"))["rows"]
    assert cost == pytest.approx((450 + 10250) / 1e6) and unpriced == 1  # the unknown price is not guessed


async def test_a_bad_price_is_invalid_params_naming_the_field(client: Harness) -> None:
    model = {"ref": {"provider": "p", "name": "m"}, "api": "openai-chat", "contextWindow": 1000}
    for price, problem in (
        ({"input": 1.0}, "required field missing @ $.models[0].price.output"),
        ({"input": -1.0, "output": 1.0}, "must be a number of at least 0 @ $.models[0].price.input"),
        ({"currency": "euro", "input": 1.0, "output": 1.0}, "three capital letters"),
    ):
        with pytest.raises(ResponseError) as caught:
            await client.call("setDefinitions", {"models": [{**model, "price": price}]})
        assert caught.value.kind == "invalidParams" and any(problem in e for e in caught.value.data["errors"])


async def test_export_usage_writes_parquet_and_only_new_rows_next_time(
    agent: Harness, provider: FakeProviderServer, tmp_path: Path
) -> None:
    await agent.call("setDefinitions", priced(provider))
    provider.enqueue("openai-chat", ChatStream().text("one").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("hi")
    await session.turn_completed()
    out = tmp_path / "pool"
    first = await agent.call("exportUsage", {"directory": str(out), "machine": "m1", "user": "alice"})
    assert first["number"] == 1 and (first["machine"], first["user"], first["redacted"]) == ("m1", "alice", False)
    assert {t["name"]: t["rows"] for t in first["tables"]} == {
        "model_calls": 1,
        "turns": 1,
        "compactions": 0,
        "file_changes": 0,
    }
    provider.enqueue("openai-chat", ChatStream().text("two").finish(usage=USAGE).response())
    await session.submit("again")
    await session.turn_completed(2)
    second = await agent.call("exportUsage", {"directory": str(out), "machine": "m1", "user": "alice", "redact": True})
    assert {t["name"]: t["rows"] for t in second["tables"]} == {
        "model_calls": 1,
        "turns": 1,
        "compactions": 0,
        "file_changes": 0,
    }
    with duckdb.connect() as con:
        rows = con.sql(
            f"SELECT machine, \"user\", cost, day FROM read_parquet('{out}/model_calls/**/*.parquet') ORDER BY seq"
        ).fetchall()
    assert [(m, u) for m, u, _, _ in rows] == [("m1", "alice")] * 2 and rows[0][2] == pytest.approx(450 / 1e6)
    exports = await query(agent, "SELECT number, redacted, model_calls FROM exports ORDER BY number")
    assert exports["rows"] == [[1, False, 1], [2, True, 1]]
    with pytest.raises(ResponseError) as caught:
        await agent.call("exportUsage", {"directory": "relative/dir"})
    assert caught.value.data["errors"] == ["expected an absolute path, got 'relative/dir' @ $.directory"]
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ResponseError) as caught:
        await agent.call("exportUsage", {"directory": str(tmp_path / "a-file")})
    assert caught.value.kind == "invalidParams" and "cannot write there" in caught.value.message


async def test_context_usage_names_what_fills_the_window(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("answer").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("question")
    await session.turn_completed()
    ids = {"conversationId": session.id, "sessionId": session.session_id}
    usage = await agent.call("getSessionContextUsage", ids)
    assert [(i["type"], i["tokens"] > 0) for i in usage["items"]] == [("userMessage", True), ("assistantMessage", True)]
    assert usage["systemTokens"] > 0 and usage["toolTokens"] > 0


REFUSED = {
    "INSERT INTO conversations SELECT * FROM conversations": "this is INSERT",
    "UPDATE conversations SET title = 'x'": "this is UPDATE",
    "DELETE FROM model_calls": "this is DELETE",
    "ATTACH 'other.duckdb' AS other": "this is ATTACH",
    "COPY model_calls TO 'calls.parquet'": "this is COPY",
    "INSTALL httpfs": "this is INSTALL or LOAD",
    "LOAD httpfs": "this is INSTALL or LOAD",
    "SELECT 1; SELECT 2": "one statement at a time: found 2",
    "SELECT 1; DROP TABLE items": "one statement at a time: found 2",
    "CREATE TABLE t AS SELECT 1": "this is CREATE",
}


@pytest.mark.parametrize("sql", REFUSED)
async def test_query_refuses_writes_attach_copy_install_load_and_several_statements(client: Harness, sql: str) -> None:
    with pytest.raises(ResponseError) as caught:
        await client.call("query", {"sql": sql})
    assert caught.value.kind == "invalidParams" and REFUSED[sql] in caught.value.message
    assert (await query(client, "SELECT count(*) FROM conversations"))["rows"] == [[0]]
