"""Finding 13: queries were bounded in rows, not bytes or time. Six 50 MB columns in one row came back
as a 300 MB answer (the host at 1.8 GB); two never-ending queries of one editor took both query
threads, so every other editor's `SELECT 1` waited behind them, with no time limit; a query that ran
DuckDB out of memory was answered `invalidParams`, as if its SQL were wrong.

An answer now stays within a byte budget well below the message limit (long values cut with a
marker, `truncated: true`), a query has a time limit (`timeoutMs`) past which it is interrupted, one
connection runs at most two queries at once in a pool with more threads, a connection that goes stops
its queries, and running out of memory says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from harness import Harness, ResponseError

from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.wire.framing import DEFAULT_MAX_MESSAGE

NEVER_ENDS = "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"  # 10^18 rows, interruptible
PER_CLIENT = 2  # queries one connection may run at once
GUARD = 20.0  # a hang guard only: each of these answers in well under a second


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def store(home: Path) -> DuckDBStorage:
    return await DuckDBStorage.open(str(home / "openvaala.duckdb"))


@pytest.fixture
async def editor(home: Path, workspace: Path, store: DuckDBStorage) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace], storage=store)
    yield harness
    await harness.stop()


async def query(client: Harness, sql: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.call("query", {"sql": sql, **params})
    return result


def never_ending(client: Harness, count: int) -> list[asyncio.Task[Any]]:
    return [asyncio.ensure_future(client.call("query", {"sql": NEVER_ENDS}, timeout=60)) for _ in range(count)]


async def threads_freed(store: DuckDBStorage) -> None:
    """Every query the store ran has let go of its thread and cursor (hang guard only)."""
    async with asyncio.timeout(GUARD):
        while store._queries:
            await asyncio.sleep(0.01)


async def test_six_columns_of_50_mb_come_back_cut_well_under_the_message_limit(editor: Harness) -> None:
    columns = ", ".join(f"repeat('x', 50_000_000) AS c{i}" for i in range(6))
    result = await query(editor, f"SELECT {columns}")
    size = len(json.dumps(result, ensure_ascii=False).encode())
    assert size < DEFAULT_MAX_MESSAGE // 2  # was 300 MB, over four times the limit
    assert result["truncated"] is True
    [row] = result["rows"]
    for value in row:  # each cut to its share of the budget, and saying so
        text, marker, rest = value.partition("…[cut: ")
        assert set(text) == {"x"} and len(text) > 1_000_000 and marker
        assert rest == f"the first {len(text):,} of 50,000,000 characters]"


async def test_one_slow_client_cannot_take_every_query_thread(editor: Harness) -> None:
    slow = editor.connect()
    running = never_ending(slow, PER_CLIENT)
    try:
        # another editor's query finds a thread (it waited forever behind the two)
        assert (await query(editor, "SELECT 1"))["rows"] == [[1]]
        with pytest.raises(ResponseError) as refused:
            await query(slow, "SELECT 1")
        assert refused.value.kind == "overloaded" and refused.value.code == -32021
        assert f"{PER_CLIENT} queries" in refused.value.message
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def test_a_query_past_its_time_limit_is_interrupted_and_says_how_to_raise_it(
    editor: Harness, store: DuckDBStorage
) -> None:
    for _ in range(PER_CLIENT + 1):  # each one's place is freed: the client is never `overloaded`
        with pytest.raises(ResponseError) as stopped:
            await query(editor, NEVER_ENDS, timeoutMs=100)
        assert stopped.value.kind == "internal"
        assert "time limit of 100 ms" in stopped.value.message and "timeoutMs" in stopped.value.message
    await threads_freed(store)
    assert (await query(editor, "SELECT 1", timeoutMs=int(GUARD * 1000)))["rows"] == [[1]]
    with pytest.raises(ResponseError) as beyond:
        await query(editor, "SELECT 1", timeoutMs=3_600_000)
    assert beyond.value.kind == "invalidParams" and "$.timeoutMs" in beyond.value.message


async def test_a_client_that_goes_away_mid_query_frees_its_threads(editor: Harness, store: DuckDBStorage) -> None:
    leaving = editor.connect()
    running = never_ending(leaving, PER_CLIENT)
    assert (await query(editor, "SELECT 1"))["rows"] == [[1]]  # both started meanwhile
    assert len(store._queries) == PER_CLIENT
    leaving.disconnect()
    for task in running:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, GUARD)
    await threads_freed(store)


async def test_running_out_of_memory_says_so_and_is_not_the_sqls_fault(editor: Harness) -> None:
    one_gigabyte = "SELECT length(string_agg(repeat('x', 1000 + (range % 7)::INT), ',')) FROM range(1000000)"
    with pytest.raises(ResponseError) as failed:
        await query(editor, one_gigabyte)
    assert failed.value.kind == "internal"  # was invalidParams
    assert "ran out of memory" in failed.value.message and "memory_limit is 128MB" in failed.value.message
    assert "Out of Memory Error" in failed.value.message  # DuckDB's own words: what it failed at
    assert (await query(editor, "SELECT 1"))["rows"] == [[1]]
