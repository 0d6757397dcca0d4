"""The usage reports and the Parquet export on a database of 1M model calls (bench/usage_data.py).

Each report's figures are checked against SQL written here on the tables (not the views), costs also
against the price list the data was made with; the export round-trips (row counts and sums), a second
export adds only the new rows, and Apache DataFusion reads the export to the same totals.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.export import ExportRequest
from openvaala_lsp.storage.interfaces import SqlResult
from openvaala_lsp.storage.reports import REPORTS, Filters, report_sql

CALLS = 1_000_000
_spec = importlib.util.spec_from_file_location("usage_data", Path(__file__).parents[2] / "bench/usage_data.py")
assert _spec is not None and _spec.loader is not None
usage_data = importlib.util.module_from_spec(_spec)
sys.modules["usage_data"] = usage_data
_spec.loader.exec_module(usage_data)

# the same figures, from the tables: no view, no report code
DAY = "DATE '1970-01-01' + CAST(epoch_us(m.started_at) // 86400000000 AS INTEGER)"
COST = """((m.input_tokens - m.cached_input_tokens - m.cache_write_tokens) * m.price_input
  + m.cached_input_tokens * m.price_cached_input + m.cache_write_tokens * m.price_cache_write
  + (m.output_tokens - m.reasoning_tokens) * m.price_output + m.reasoning_tokens * m.price_reasoning) / 1e6"""
KEYS = {
    "day": [f"strftime({DAY}, '%Y-%m-%d')"],
    "model": ["m.provider", "m.model"],
    "project": ["m.workspace"],
    "conversation": ["m.conversation_id"],
    "agent": ["s.agent_name"],
}
INDEPENDENT = """
SELECT {keys}, count(*), sum(m.input_tokens), sum(m.cached_input_tokens), sum(m.cache_write_tokens),
  sum(m.output_tokens), sum(m.reasoning_tokens), sum(m.input_tokens + m.output_tokens),
  sum({cost}), count(*) FILTER (WHERE m.price_currency IS NULL), count(*) FILTER (WHERE m.usage_estimated),
  count(*) FILTER (WHERE m.error IS NOT NULL)
FROM model_calls m JOIN sessions s ON s.id = m.session_id
WHERE {where}
GROUP BY ALL
"""
MEASURES = [
    "calls",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost",
    "unpriced_calls",
    "estimated_calls",
    "failed_calls",
]
FILTERS = {
    "all": Filters(),
    "march in project 3": Filters(
        since=dt.datetime(2025, 3, 1, tzinfo=dt.UTC),
        until=dt.datetime(2025, 3, 20, 12, tzinfo=dt.UTC),
        project="/home/dev/project3",
    ),
}


@pytest.fixture(scope="session")
def million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usage") / "million.duckdb"
    usage_data.generate(str(path), CALLS)
    return path


@pytest.fixture
def copy(million: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy to write to (exports record their watermark)."""
    path = tmp_path / "copy.duckdb"
    shutil.copyfile(million, path)
    yield path


def run(path: Path, sql: str, parameters: list[Any] | None = None) -> tuple[list[str], list[list[Any]]]:
    """What `openvaala sql` / `openvaala/query` return: the storage's query, values as JSON."""

    async def query() -> SqlResult:
        storage = await DuckDBStorage.open(str(path))
        try:
            return await storage.query(sql, parameters or [], 100_000)
        finally:
            await storage.close()

    result = asyncio.run(query())
    return [c.name for c in result.columns], result.rows


def tables(path: Path, sql: str, parameters: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(path), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql, parameters or []).fetchall()


def independent_where(filters: Filters) -> tuple[str, list[Any]]:
    clauses, parameters = ["true"], []
    if filters.since:
        clauses.append("m.started_at >= ?")
        parameters.append(filters.since)
    if filters.until:
        clauses.append("m.started_at < ?")
        parameters.append(filters.until)
    if filters.project:
        clauses.append("(m.workspace = ? OR m.workspace LIKE ?)")
        parameters += [filters.project, filters.project + "/%"]
    return " AND ".join(clauses), parameters


@pytest.mark.parametrize("filter_name", FILTERS)
@pytest.mark.parametrize("name", REPORTS)
def test_each_report_matches_sql_on_the_tables(million: Path, name: str, filter_name: str) -> None:
    report, filters = REPORTS[name], FILTERS[filter_name]
    sql, parameters = report_sql(report, filters, limit=100_000)
    columns, rows = run(million, sql, parameters)
    where, where_parameters = independent_where(filters)
    expected = tables(million, INDEPENDENT.format(keys=", ".join(KEYS[name]), cost=COST, where=where), where_parameters)
    assert rows and len(rows) == len(expected)
    got = {tuple(row[columns.index(k)] for k in _keys(name)): row for row in rows}
    for key_and_values in expected:
        keys, values = key_and_values[: len(KEYS[name])], key_and_values[len(KEYS[name]) :]
        row = got[tuple(keys)]
        for measure, value in zip(MEASURES, values, strict=True):
            if measure == "cost":
                unpriced = values[MEASURES.index("unpriced_calls")] == values[0]
                assert row[columns.index("cost")] == (None if unpriced else pytest.approx(value, rel=1e-9))
            else:
                assert row[columns.index(measure)] == value, (name, keys, measure)
    if name == "conversation":  # the largest first, with the conversation's title
        titles = dict(tables(million, "SELECT id, title FROM conversations"))
        assert all(row[1] == titles[row[0]] for row in rows)
        default_sql, default_parameters = report_sql(report, filters)
        _, top = run(million, default_sql, default_parameters)
        totals = sorted((row[columns.index("total_tokens")] for row in rows), reverse=True)
        assert [row[columns.index("total_tokens")] for row in top] == totals[:20]


def _keys(name: str) -> list[str]:
    return {"project": ["project"], "model": ["provider", "model"]}.get(name, REPORTS[name].key_names)


def test_costs_follow_the_price_list_and_unknown_prices_stay_null(million: Path) -> None:
    sql, parameters = report_sql(REPORTS["model"], Filters())
    columns, rows = run(million, sql, parameters)
    by_model = {row[columns.index("model")]: dict(zip(columns, row, strict=True)) for row in rows}
    for _, model, _, currency, p_in, p_cached, p_write, p_out, p_reasoning in usage_data.MODELS:
        row = by_model[model]
        if currency is None:  # the local model has no price: no cost, never a guess
            assert (row["cost"], row["currency"], row["unpriced_calls"]) == (None, None, row["calls"])
            continue
        uncached = row["input_tokens"] - row["cached_input_tokens"] - row["cache_write_tokens"]
        expected = (
            uncached * p_in
            + row["cached_input_tokens"] * p_cached
            + row["cache_write_tokens"] * p_write
            + (row["output_tokens"] - row["reasoning_tokens"]) * p_out
            + row["reasoning_tokens"] * p_reasoning
        ) / 1e6
        assert row["cost"] == pytest.approx(expected, rel=1e-9) and row["currency"] == currency
        assert row["unpriced_calls"] == 0


def test_without_prices_every_cost_is_null(copy: Path) -> None:
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE model_calls SET price_currency = NULL, price_input = NULL, price_output = NULL")
    for report in REPORTS.values():
        sql, parameters = report_sql(report, Filters())
        columns, rows = run(copy, sql, parameters)
        assert rows and all(row[columns.index("cost")] is None for row in rows)
        assert all(row[columns.index("unpriced_calls")] == row[columns.index("calls")] for row in rows)
    [[daily_cost, tree_cost]] = tables(
        copy, "SELECT (SELECT count(cost) FROM usage_daily), (SELECT count(cost) FROM sessions_tree)"
    )
    assert (daily_cost, tree_cost) == (0, 0)


SUMS = "count(*), count(DISTINCT {id}), sum({tokens})"


async def test_the_parquet_export_round_trips_and_goes_on_incrementally(copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "pool"
    storage = await DuckDBStorage.open(str(copy))
    try:
        first = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
    finally:
        await storage.close()
    assert first.number == 1
    assert {t.name: t.rows for t in first.tables} == {
        "model_calls": CALLS,
        "turns": CALLS // 5,
        "compactions": 5000,
        "file_changes": 0,
    }
    assert all(t.files == 90 for t in first.tables if t.rows)  # one file per day
    source = _totals_of_database(copy)
    assert _totals_in_duckdb(out) == source

    usage_data.add_calls(str(copy), CALLS, 10_000, CALLS)  # newer calls, as a runtime appends them
    storage = await DuckDBStorage.open(str(copy))
    try:
        second = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
        third = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
    finally:
        await storage.close()
    assert second.number == 2
    assert {t.name: t.rows for t in second.tables} == {
        "model_calls": 10_000,
        "turns": 2_000,
        "compactions": 50,
        "file_changes": 0,
    }
    assert {t.name: t.rows for t in third.tables} == {"model_calls": 0, "turns": 0, "compactions": 0, "file_changes": 0}
    grown = _totals_of_database(copy)
    assert grown != source and _totals_in_duckdb(out) == grown  # no row twice, none missing
    assert _totals_in_datafusion(out) == grown
    watermarks = tables(copy, "SELECT number, model_calls, turns FROM exports ORDER BY number")
    assert watermarks == [(1, CALLS, CALLS // 5), (2, 10_000, 2_000), (3, 0, 0)]


def _totals_of_database(path: Path) -> dict[str, tuple[Any, ...]]:
    calls = tables(path, "SELECT count(*), count(DISTINCT call_id), sum(total_tokens), sum(cost) FROM model_calls_v")
    turns = tables(path, "SELECT count(*), count(DISTINCT turn_id), sum(total_tokens) FROM turns_v")
    compactions = tables(path, "SELECT count(*), count(DISTINCT item_id), sum(freed) FROM compactions_v")
    return _rounded({"model_calls": calls[0], "turns": turns[0], "compactions": compactions[0]})


def _totals_in_duckdb(out: Path) -> dict[str, tuple[Any, ...]]:
    with duckdb.connect() as con:
        scan = "read_parquet('{}/**/*.parquet')"
        calls = con.sql(
            "SELECT count(*), count(DISTINCT call_id), sum(total_tokens), sum(cost)"
            f" FROM {scan.format(out / 'model_calls')}"
        ).fetchall()
        turns = con.sql(
            f"SELECT count(*), count(DISTINCT turn_id), sum(total_tokens) FROM {scan.format(out / 'turns')}"
        ).fetchall()
        compactions = con.sql(
            f"SELECT count(*), count(DISTINCT item_id), sum(freed) FROM {scan.format(out / 'compactions')}"
        ).fetchall()
    return _rounded({"model_calls": calls[0], "turns": turns[0], "compactions": compactions[0]})


def _totals_in_datafusion(out: Path) -> dict[str, tuple[Any, ...]]:
    """Apache DataFusion (Rust, Arrow), not DuckDB, reading the same folder."""
    datafusion = pytest.importorskip("datafusion")
    ctx = datafusion.SessionContext()
    for name in ("model_calls", "turns", "compactions"):
        ctx.register_parquet(name, str(out / name), file_extension=".parquet")
    found = {}
    for name, key, measure in (
        ("model_calls", "call_id", "sum(total_tokens), sum(cost)"),
        ("turns", "turn_id", "sum(total_tokens)"),
        ("compactions", "item_id", "sum(freed)"),
    ):
        table = ctx.sql(f"SELECT count(*), count(DISTINCT {key}), {measure} FROM {name}").to_pydict()
        found[name] = tuple(column[0] for column in table.values())
    return _rounded(found)


def _rounded(totals: dict[str, tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
    """Counts exactly; sums of DOUBLE (which depend on the order of addition) to 1e-9 relative."""
    return {
        name: tuple(pytest.approx(value, rel=1e-9) if isinstance(value, float) else int(value) for value in values)
        for name, values in totals.items()
    }
