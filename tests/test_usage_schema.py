"""The analytic schema's promises: every view column is described (in the database and in
schemas/README.md), the context and compaction views read what the runtime writes, and the export
scrubs keys, redacts, retries cleanly and needs no pyarrow."""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from bench_usage import usage_data

from openvaala_lsp.model import (
    Compaction,
    CompactionTrigger,
    Content,
    Conversation,
    Item,
    ItemType,
    ModelCall,
    ModelPrice,
    Session,
    TokenUsage,
)
from openvaala_lsp.storage import export, opening
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.interfaces import ExportRequest
from openvaala_lsp.storage.migrations import DOCS, migrate

README = Path(__file__).parent.parent / "schemas/README.md"
AT = dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)


def test_every_view_column_is_described_in_the_database_and_the_readme() -> None:
    con = duckdb.connect()
    migrate(con, ":memory:")
    readme = README.read_text()
    for view, (_, columns) in DOCS.items():
        described = con.sql(
            "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
            params=[view],
        ).fetchall()
        assert [name for name, _ in described] == list(columns), view
        assert all(comment for _, comment in described)
        section = readme[readme.index(f"### `{view}`") :]
        assert all(f"| `{column}` |" in section for column in columns), view


async def seeded(path: Path) -> DuckDBStorage:
    storage = await DuckDBStorage.open(str(path))
    await storage.create_conversation(
        Conversation(id="conv_1", title="secret title", created_at=AT, updated_at=AT),
        Session(id="sess_1", conversation_id="conv_1", agent_name="lead", created_at=AT),
    )
    usage = TokenUsage(input_tokens=1000, cached_input_tokens=400, output_tokens=100, total_tokens=1100)
    price = ModelPrice(currency="USD", input=1.0, output=4.0)
    for n, error in enumerate((None, "HTTPError: 401 Incorrect API key provided: sk-abcdefghijklmnop1234")):
        await storage.append_model_call(
            ModelCall(
                id=f"call_{n}",
                conversation_id="conv_1",
                session_id="sess_1",
                turn_id="turn_1",
                provider="p",
                model="m",
                started_at=AT + dt.timedelta(minutes=n),
                usage=usage,
                error=error,
                price=price,
                context_window=8000,
                context_tokens=990,
            )
        )
    compaction = Compaction(trigger=CompactionTrigger.AUTO, summarized=False, pruned_item_ids=["a", "b"])
    compaction.tokens_before, compaction.tokens_after = 7000, 2500
    await storage.append_item(
        Item(
            id="item_c",
            conversation_id="conv_1",
            session_id="sess_1",
            turn_id="turn_1",
            type=ItemType.COMPACTION,
            created_at=AT + dt.timedelta(minutes=5),
            content=[Content(type="text", text="")],
            compaction=compaction,
        ),
        durable=True,
    )
    await storage.flush()
    return storage


async def test_context_usage_and_compactions_read_what_the_runtime_writes(tmp_path: Path) -> None:
    storage = await seeded(tmp_path / "h.duckdb")
    result = await storage.query(
        "SELECT event, context_window, tokens, estimated_tokens, freed, trigger"
        " FROM context_usage ORDER BY occurred_at",
        [],
        10,
    )
    # the failed call is not a context the session had; the compaction takes the window of the call before it
    assert result.rows == [["call", 8000, 1000, 990, None, None], ["compaction", 8000, 7000, 7000, 4500, "auto"]]
    [[pruned, summarized, cost]] = (
        await storage.query(
            "SELECT pruned_items, summarized, (SELECT sum(cost) FROM model_calls_v) FROM compactions_v", [], 10
        )
    ).rows
    assert (pruned, summarized) == (2, False)
    assert cost == pytest.approx(2 * (600 * 1.0 + 400 * 1.0 + 100 * 4.0) / 1e6)  # cachedInput defaults to input
    await storage.close()


async def test_exports_scrub_keys_redact_text_and_redo_a_failed_try(tmp_path: Path) -> None:
    storage = await seeded(tmp_path / "h.duckdb")
    plain, redacted = tmp_path / "plain", tmp_path / "redacted"
    await storage.export_usage(ExportRequest(directory=str(plain), machine="m", user="u"))
    # a failed try of export 1 left a file: the export that redoes it removes it first
    stale = redacted / "model_calls" / "day=2025-03-01"
    stale.mkdir(parents=True)
    (stale / f"{next(iter(plain.glob('model_calls/*/*.parquet'))).name}").write_bytes(b"partial")
    await storage.export_usage(ExportRequest(directory=str(redacted), machine="m", user="u", redact=True))
    await storage.close()
    with duckdb.connect() as con:

        def errors(folder: Path) -> list[object]:
            scan = f"read_parquet('{folder}/model_calls/**/*.parquet')"
            return [row[0] for row in con.sql(f"SELECT error FROM {scan} ORDER BY seq").fetchall()]

        assert errors(plain) == [None, "HTTPError: 401 Incorrect API key provided: sk-[redacted]"]
        assert errors(redacted) == [None, None]
        everything = con.sql(f"SELECT * FROM read_parquet('{plain}/**/*.parquet', union_by_name = true)").fetchall()
    assert "secret title" not in repr(everything)  # no titles or message text, ever


async def test_an_export_beyond_the_usual_memory_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """turns_v sums every call per turn in memory, unspilled: an export lifts DuckDB's limit while it
    runs (reports beside it profit too) and puts the usual one back afterwards."""
    monkeypatch.setitem(opening.CONFIG, "memory_limit", "16MB")  # the usual 128 MB, for 8x fewer turns
    usage_data.generate(str(tmp_path / "h.duckdb"), 200_000)
    storage = await DuckDBStorage.open(str(tmp_path / "h.duckdb"))
    try:
        [[usual]] = (await storage.query("SELECT current_setting('memory_limit')", [], 1)).rows
        with pytest.raises(Exception, match="Out of Memory"):  # what the export reads, under the usual limit
            await storage.query("SELECT sum(hash(t)) FROM turns_v t", [], 1)
        outcome = await storage.export_usage(ExportRequest(directory=str(tmp_path / "out"), machine="m", user="u"))
        assert [table.rows for table in outcome.tables] == [200_000, 40_000, 1_000, 0]
        assert (await storage.query("SELECT current_setting('memory_limit')", [], 1)).rows == [[usual]]
        monkeypatch.setattr(export, "EXPORT_MEMORY_LIMIT", "16MB")
        with pytest.raises(Exception, match="Out of Memory"):  # and the lift is what made it pass
            await storage.export_usage(ExportRequest(directory=str(tmp_path / "again"), machine="m", user="u"))
    finally:
        await storage.close()


def test_the_export_needs_no_pyarrow(tmp_path: Path) -> None:
    asyncio.run(_seed_and_close(tmp_path / "h.duckdb"))
    child = f"""
import asyncio, sys
sys.modules["pyarrow"] = None  # as in a plain install: importing it fails
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.interfaces import ExportRequest
async def main():
    storage = await DuckDBStorage.open({str(tmp_path / "h.duckdb")!r})
    outcome = await storage.export_usage(ExportRequest(directory={str(tmp_path / "out")!r}, machine="m", user="u"))
    await storage.close()
    print([t.rows for t in outcome.tables])
asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2, 0, 1, 0]"


async def _seed_and_close(path: Path) -> None:
    await (await seeded(path)).close()
