"""SQL on the history (`storage/sql.py`) against real DuckDB files: only read-only statements run,
values come back as JSON, and a query neither waits for the writer nor holds it up."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from openvaala_lsp.model import Conversation, Session
from openvaala_lsp.storage import StorageClosedError
from openvaala_lsp.storage.duckdb_store import QUERY_THREADS, DuckDBStorage
from openvaala_lsp.storage.errors import QueryError, StorageOutOfMemory
from openvaala_lsp.storage.interfaces import SqlResult
from openvaala_lsp.storage.opening import CONFIG
from openvaala_lsp.storage.sql import MAX_ERROR_CHARS, QueryJob
from openvaala_lsp.storage.writer import Run
from openvaala_lsp.wire import compact_json

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
FOREVER = "SELECT count(*) FROM range(1000000000000000)"  # never ends on its own
WAIT = 20.0


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "history.duckdb")


@pytest.fixture
async def storage(db_path: str) -> AsyncIterator[DuckDBStorage]:
    store = await DuckDBStorage.open(db_path)
    await add_conversation(store, "conv_1", "first")
    yield store
    await store.close()


async def add_conversation(storage: DuckDBStorage, cid: str, title: str) -> None:
    conversation = Conversation(id=cid, title=title, created_at=T0, updated_at=T0)
    await storage.create_conversation(conversation, Session(id=f"sess_{cid}", conversation_id=cid, created_at=T0))


async def rows(storage: DuckDBStorage, sql: str, *parameters: Any) -> list[list[Any]]:
    return (await storage.query(sql, list(parameters), 100)).rows


async def refused(storage: DuckDBStorage, sql: str, parameters: list[Any] | None = None) -> QueryError:
    with pytest.raises(QueryError) as caught:
        await storage.query(sql, parameters or [], 100)
    return caught.value


# Only read-only statements run

REFUSED_BY_TYPE = [
    ("INSERT INTO conversations SELECT * FROM conversations", "this is INSERT"),
    ("UPDATE conversations SET title = 'x'", "this is UPDATE"),
    ("DELETE FROM conversations", "this is DELETE"),
    ("MERGE INTO conversations c USING conversations s ON c.id = s.id WHEN MATCHED THEN DELETE", "this is MERGE"),
    ("CREATE TABLE t (a INTEGER)", "this is CREATE"),
    ("CREATE TEMP TABLE t (a INTEGER)", "this is CREATE"),
    ("CREATE VIEW v AS SELECT 1", "this is CREATE"),
    ("DROP TABLE items", "this is DROP"),
    ("ALTER TABLE items ADD COLUMN x INTEGER", "this is ALTER"),
    ("ATTACH '{dir}/other.duckdb' AS other", "this is ATTACH"),
    ("DETACH other", "this is DETACH"),
    ("COPY conversations TO '{dir}/out.csv'", "this is COPY"),
    ("COPY conversations FROM '{dir}/in.csv'", "this is COPY"),
    ("EXPORT DATABASE '{dir}/export'", "this is EXPORT"),
    ("IMPORT DATABASE '{dir}/export'", "this is PRAGMA"),
    ("INSTALL httpfs", "this is INSTALL or LOAD"),
    ("LOAD json", "this is INSTALL or LOAD"),
    ("SET threads = 4", "this is SET, RESET or USE"),
    ("RESET threads", "this is SET, RESET or USE"),
    ("SET VARIABLE x = 1", "this is SET, RESET or USE"),
    ("USE memory", "this is SET, RESET or USE"),
    ("PRAGMA memory_limit = '1GB'", "this is SET, RESET or USE"),
    ("PRAGMA table_info('items')", "this is PRAGMA; for a table's columns use DESCRIBE"),
    ("CALL duckdb_tables()", "this is CALL"),
    ("CHECKPOINT", "this is CALL"),
    ("VACUUM", "this is VACUUM or ANALYZE"),
    ("BEGIN TRANSACTION", "this is TRANSACTION"),
    ("PREPARE p AS SELECT 1", "this is PREPARE"),
    ("PIVOT conversations ON archived USING count(*)", "this is a statement of several steps"),
    ("UPDATE EXTENSIONS", "this is a statement of another kind"),
    ("EXPLAIN ANALYZE DELETE FROM conversations", "this explains DELETE"),
    ("EXPLAIN (FORMAT JSON) UPDATE conversations SET title = 'x'", "this explains UPDATE"),
    ("SELECT 1; DELETE FROM conversations", "one statement at a time: found 2"),
    ("SELECT 1; SELECT 2", "one statement at a time: found 2"),
    ("", "no SQL statement"),
    (" ; -- nothing", "no SQL statement"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED_BY_TYPE)
async def test_each_statement_that_is_not_read_only_is_refused_at_sql_and_changes_nothing(
    storage: DuckDBStorage, tmp_path: Path, sql: str, message: str
) -> None:
    files = sorted(tmp_path.iterdir())
    error = await refused(storage, sql.format(dir=tmp_path))
    assert error.field == "sql"
    assert message in error.message
    assert await rows(storage, "SELECT id, title FROM conversations") == [["conv_1", "first"]]
    assert sorted(tmp_path.iterdir()) == files  # nothing written, attached or exported


@pytest.mark.parametrize(
    "sql",
    [
        "WITH gone AS (DELETE FROM conversations RETURNING id) SELECT * FROM gone",
        "SELECT nextval('model_call_seq')",
    ],
)
async def test_a_select_that_writes_fails_in_the_read_only_transaction(storage: DuckDBStorage, sql: str) -> None:
    error = await refused(storage, sql)
    assert error.field == "sql" and "transaction is launched in read-only mode" in error.message
    assert await rows(storage, "SELECT count(*) FROM conversations") == [[1]]
    sequence = "SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'model_call_seq'"
    assert await rows(storage, sequence) == [[None]]  # never advanced


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('{file}')",
        "SELECT * FROM read_text('{file}')",
        "SELECT * FROM read_parquet('{file}')",
        "SELECT * FROM read_json('{file}')",
        "SELECT * FROM '{file}'",
        "SELECT * FROM glob('{dir}/*')",
    ],
)
async def test_functions_reaching_other_files_are_refused(storage: DuckDBStorage, tmp_path: Path, sql: str) -> None:
    outside = tmp_path / "secret.csv"
    outside.write_text("a,b\n1,2\n")
    error = await refused(storage, sql.format(file=outside, dir=tmp_path))
    assert error.field == "sql" and "disabled by configuration" in error.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM conversations",
        "WITH c AS (SELECT id FROM conversations) SELECT * FROM c",
        "FROM conversations SELECT id",
        "VALUES ('conv_1')",
        "(SELECT id FROM conversations)",
        "SELECT id FROM conversations; ",
        "-- a comment first\nSELECT id FROM conversations",
    ],
)
async def test_read_only_queries_run(storage: DuckDBStorage, sql: str) -> None:
    assert await rows(storage, sql) == [["conv_1"]]


@pytest.mark.parametrize(
    ("sql", "first_column"),
    [
        ("DESCRIBE conversations", "column_name"),
        ("SHOW conversations", "column_name"),
        ("SHOW TABLES", "name"),
        ("SUMMARIZE conversations", "column_name"),
        ("EXPLAIN SELECT * FROM conversations", "explain_key"),
        ("EXPLAIN ANALYZE SELECT * FROM conversations", "explain_key"),
        ("EXPLAIN (FORMAT JSON) SELECT * FROM conversations", "explain_key"),
        ("PIVOT conversations ON archived IN (true, false) USING count(*)", "id"),
        ("SELECT * FROM duckdb_columns() WHERE table_name = 'items'", "database_name"),
    ],
)
async def test_describe_show_summarize_explain_run(storage: DuckDBStorage, sql: str, first_column: str) -> None:
    result = await storage.query(sql, [], 1000)
    assert result.columns[0].name == first_column and result.rows


# Parameters, limit, errors


async def test_positional_parameters_take_json_values(storage: DuckDBStorage) -> None:
    await add_conversation(storage, "conv_2", "second")
    assert await rows(storage, "SELECT title FROM conversations WHERE id = ?", "conv_2") == [["second"]]
    assert await rows(storage, "SELECT title FROM conversations WHERE id = $1 OR title = $1", "first") == [["first"]]
    assert await rows(
        storage, "SELECT count(*) FROM conversations WHERE created_at >= ?::TIMESTAMPTZ", "2025-03-01T11:00:00Z"
    ) == [[2]]
    assert await rows(storage, "SELECT ?, ?, ?, ?, ?", 7, 2.5, True, None, [1, 2]) == [[7, 2.5, True, None, [1, 2]]]
    assert await rows(storage, "SELECT ?.a", {"a": "x"}) == [["x"]]


async def test_parameter_mistakes_name_the_field(storage: DuckDBStorage) -> None:
    error = await refused(storage, "SELECT ?, ?", [1])
    assert (error.field, error.message) == ("parameters", "the statement takes 2 parameters, got 1")
    error = await refused(storage, "SELECT 1", [1])
    assert (error.field, error.message) == ("parameters", "the statement takes 0 parameters, got 1")
    error = await refused(storage, "SELECT $name", [1])
    assert error.field == "sql" and "named parameters ($name) are not supported" in error.message
    error = await refused(storage, "SELECT ?::INTEGER", ["seven"])
    assert error.field == "sql" and "Could not convert string 'seven'" in error.message


async def test_limit_caps_rows_and_truncated_says_more_existed(storage: DuckDBStorage) -> None:
    exact = await storage.query("SELECT * FROM range(5)", [], 5)
    assert exact.rows == [[0], [1], [2], [3], [4]] and exact.truncated is False
    cut = await storage.query("SELECT * FROM range(5)", [], 4)
    assert cut.rows == [[0], [1], [2], [3]] and cut.truncated is True
    many = await storage.query("SELECT * FROM range(2500)", [], 2400)  # across several fetches
    assert [r[0] for r in many.rows] == list(range(2400)) and many.truncated is True
    empty = await storage.query("SELECT * FROM conversations WHERE false", [], 1)
    assert empty.rows == [] and empty.truncated is False and len(empty.columns) == 17


def run_job(sql: str, max_bytes: int) -> SqlResult:
    con = duckdb.connect(config=CONFIG)
    try:
        return QueryJob(con.cursor(), sql, [], 1000, max_bytes=max_bytes).run()
    finally:
        con.close()


def test_a_result_stays_within_its_byte_budget_as_the_wire_encodes_it() -> None:
    narrow = run_job("SELECT repeat('x', 1000) FROM range(100)", 5000)
    assert narrow.truncated is True and len(narrow.rows) == 4
    wide = run_job("SELECT repeat('é', 1000) FROM range(100)", 5000)  # bytes, not characters: é takes two
    assert wide.truncated is True and len(wide.rows) == 2
    for result in (narrow, wide):
        assert len(compact_json.dumps(result.rows)) <= 5000


def test_a_value_over_its_columns_share_of_the_budget_is_cut_and_says_so() -> None:
    result = run_job("SELECT repeat('x', 10000) AS t, [repeat('y', 10000)] AS l, 7 AS n", 3000)
    [[text, listed, number]] = result.rows
    assert result.truncated is True and number == 7
    kept = text.partition("…")[0]
    assert set(kept) == {"x"} and text == f"{kept}…[cut: the first {len(kept):,} of 10,000 characters]"
    assert listed.startswith('["yyy') and listed.endswith(" of 10,004 characters of its JSON]")
    for value in (text, listed):  # each within its share, 3000 / 3 columns
        assert 900 < len(compact_json.dumps(value)) <= 1000
    [[escaped]] = run_job("SELECT repeat(chr(1), 10000)", 1000).rows  # \u0001: six bytes each
    assert 900 < len(compact_json.dumps(escaped)) <= 1000 and escaped.endswith(" of 10,000 characters]")
    whole = run_job("SELECT repeat('x', 500) AS t, [1, 2] AS l", 3000)
    assert whole.rows == [["x" * 500, [1, 2]]] and whole.truncated is False


async def test_sql_errors_carry_duckdbs_message_bounded(storage: DuckDBStorage) -> None:
    error = await refused(storage, "SELEC 1")
    assert error.field == "sql" and error.message.startswith('Parser Error: syntax error at or near "SELEC"')
    error = await refused(storage, "SELECT * FROM no_such_table")
    assert error.message.startswith("Catalog Error: Table with name no_such_table does not exist")
    error = await refused(storage, "SELECT * FROM " + "x" * 2000)
    assert len(error.message) <= MAX_ERROR_CHARS and error.message.endswith("…")


# Values as JSON

VALUES_SQL = """
SELECT
  TIMESTAMPTZ '2025-03-01 12:30:05.123456+02' AS tstz,
  TIMESTAMP '2025-03-01 12:30:05' AS ts,
  TIMESTAMP_NS '2025-03-01 12:30:05.123456789' AS ts_ns,
  TIMESTAMP_MS '2025-03-01 12:30:05.123' AS ts_ms,
  TIMESTAMP_S '2025-03-01 12:30:05' AS ts_s,
  DATE '2025-03-01' AS d,
  TIME '12:30:05.5' AS t,
  TIMETZ '12:30:05+02' AS ttz,
  INTERVAL '1 day 2 hours 3.5 seconds' AS iv,
  -INTERVAL '90 minutes' AS iv_neg,
  INTERVAL '0 seconds' AS iv_zero,
  INTERVAL '1 month' AS iv_month,
  170141183460469231731687303715884105727::HUGEINT AS huge,
  18446744073709551615::UBIGINT AS ubig,
  '123456789012345678901234567890123456789012'::BIGNUM AS bignum,
  9007199254740993::BIGINT AS beyond_double,
  1.5::DECIMAL(12, 6) AS dec,
  0::DECIMAL(12, 6) AS dec_zero,
  1.5::FLOAT AS f,
  'nan'::DOUBLE AS nan,
  'infinity'::DOUBLE AS inf,
  '-infinity'::DOUBLE AS ninf,
  true AS b,
  'text' AS s,
  'a'::ENUM('a', 'b') AS e,
  '6f1c0e0e-3a4c-4d6e-9f2a-0b1c2d3e4f50'::UUID AS u,
  '\\xAA\\xBB'::BLOB AS blob,
  '101'::BIT AS bits,
  '{"a": [1, null], "b": "x"}'::JSON AS j,
  [1, NULL, 3] AS l,
  [1, 2]::INTEGER[2] AS arr,
  {'a': 1, 'b': [TIMESTAMP '2025-01-01'], 'c': NULL} AS st,
  MAP {'k': 1.5::DECIMAL(3, 1)} AS m_text,
  MAP {1: 'x'} AS m_int,
  union_value(k := 'x') AS un,
  [{'j': '[1]'::JSON}] AS nested_json,
  NULL AS nothing
"""

EXPECTED_VALUES: dict[str, tuple[str, Any]] = {
    "tstz": ("TIMESTAMP WITH TIME ZONE", "2025-03-01T10:30:05.123456Z"),
    "ts": ("TIMESTAMP", "2025-03-01T12:30:05.000000Z"),
    "ts_ns": ("TIMESTAMP_NS", "2025-03-01T12:30:05.123456Z"),
    "ts_ms": ("TIMESTAMP_MS", "2025-03-01T12:30:05.123000Z"),
    "ts_s": ("TIMESTAMP_S", "2025-03-01T12:30:05.000000Z"),
    "d": ("DATE", "2025-03-01"),
    "t": ("TIME", "12:30:05.500000"),
    "ttz": ("TIME WITH TIME ZONE", "12:30:05+02:00"),
    "iv": ("INTERVAL", "P1DT2H3.5S"),
    "iv_neg": ("INTERVAL", "-PT1H30M"),
    "iv_zero": ("INTERVAL", "PT0S"),
    "iv_month": ("INTERVAL", "P30D"),
    "huge": ("HUGEINT", 170141183460469231731687303715884105727),
    "ubig": ("UBIGINT", 18446744073709551615),
    "bignum": ("BIGNUM", 123456789012345678901234567890123456789012),
    "beyond_double": ("BIGINT", 9007199254740993),
    "dec": ("DECIMAL(12,6)", "1.500000"),
    "dec_zero": ("DECIMAL(12,6)", "0.000000"),
    "f": ("FLOAT", 1.5),
    "nan": ("DOUBLE", "NaN"),
    "inf": ("DOUBLE", "Infinity"),
    "ninf": ("DOUBLE", "-Infinity"),
    "b": ("BOOLEAN", True),
    "s": ("VARCHAR", "text"),
    "e": ("ENUM('a', 'b')", "a"),
    "u": ("UUID", "6f1c0e0e-3a4c-4d6e-9f2a-0b1c2d3e4f50"),
    "blob": ("BLOB", "qrs="),
    "bits": ("BIT", "101"),
    "j": ("JSON", {"a": [1, None], "b": "x"}),
    "l": ("INTEGER[]", [1, None, 3]),
    "arr": ("INTEGER[2]", [1, 2]),
    "st": ("STRUCT(a INTEGER, b TIMESTAMP[], c NULL)", {"a": 1, "b": ["2025-01-01T00:00:00.000000Z"], "c": None}),
    "m_text": ("MAP(VARCHAR, DECIMAL(3,1))", {"k": "1.5"}),
    "m_int": ("MAP(INTEGER, VARCHAR)", [{"key": 1, "value": "x"}]),
    "un": ("UNION(k VARCHAR)", "x"),
    "nested_json": ("STRUCT(j JSON)[]", [{"j": [1]}]),
    "nothing": ("NULL", None),
}


async def test_every_type_comes_back_as_json_by_the_documented_rules(storage: DuckDBStorage) -> None:
    result = await storage.query(VALUES_SQL, [], 10)
    got = {c.name: (c.type, value) for c, value in zip(result.columns, result.rows[0], strict=True)}
    assert got == EXPECTED_VALUES
    json.dumps(result.rows, allow_nan=False)  # strict JSON: no NaN, no Python-only values


async def test_history_values_read_as_the_protocol_writes_them(storage: DuckDBStorage) -> None:
    result = await storage.query("SELECT id, created_at, archived FROM conversations", [], 10)
    assert result.rows == [["conv_1", "2025-03-01T12:00:00.000000Z", False]]
    assert [c.type for c in result.columns] == ["VARCHAR", "TIMESTAMP WITH TIME ZONE", "BOOLEAN"]


# Never waiting for the writer, never holding it up


async def test_a_query_answers_while_the_writer_holds_a_transaction_open(storage: DuckDBStorage) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold(cur: duckdb.DuckDBPyConnection) -> None:  # runs in the writer thread, inside its transaction
        cur.execute("UPDATE conversations SET title = 'uncommitted' WHERE id = 'conv_1'")
        entered.set()
        release.wait(WAIT)

    writing = asyncio.ensure_future(storage._write([Run(hold)], durable=True))  # the writer's own op
    try:
        assert await asyncio.to_thread(entered.wait, WAIT)
        assert await rows(storage, "SELECT title FROM conversations") == [["first"]]  # the committed state
        assert not writing.done()
    finally:
        release.set()
    await writing
    assert await rows(storage, "SELECT title FROM conversations") == [["uncommitted"]]


async def test_writes_and_reads_go_on_while_a_query_runs(storage: DuckDBStorage) -> None:
    running = asyncio.ensure_future(storage.query(FOREVER, [], 10))
    await add_conversation(storage, "conv_2", "durable write")  # a durable write: committed when it returns
    assert (await storage.get_conversation("conv_2")) is not None  # the storage's reader thread
    assert await rows(storage, "SELECT count(*) FROM conversations") == [[2]]  # the other query thread
    assert not running.done()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_cancelling_the_caller_interrupts_the_query(storage: DuckDBStorage) -> None:
    running = [asyncio.ensure_future(storage.query(FOREVER, [], 10)) for _ in range(QUERY_THREADS + 1)]  # one waits
    await asyncio.sleep(0.1)  # let them start; what follows holds either way
    for task in running:
        task.cancel()
    for task in running:
        with pytest.raises(asyncio.CancelledError):
            await task
    assert storage._queries == {}
    # CHECKPOINT fails while any transaction is open: the interrupted queries' are gone
    await storage.checkpoint()
    assert await rows(storage, "SELECT 42") == [[42]]


async def test_closing_the_storage_interrupts_running_and_waiting_queries(db_path: str) -> None:
    store = await DuckDBStorage.open(db_path)
    running = [asyncio.ensure_future(store.query(FOREVER, [], 10)) for _ in range(QUERY_THREADS + 1)]
    await asyncio.sleep(0.1)
    await store.close()  # returns: the queries were interrupted
    for task in running:
        with pytest.raises(StorageClosedError):
            await task
    with pytest.raises(StorageClosedError):
        await store.query("SELECT 1", [], 10)


async def test_a_caller_that_times_out_interrupts_the_query(storage: DuckDBStorage) -> None:
    waiting = [asyncio.ensure_future(storage.query(FOREVER, [], 10)) for _ in range(QUERY_THREADS)]
    await asyncio.sleep(0.1)  # they hold every thread: what follows holds either way
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):  # waiting for a thread: it never starts
            await storage.query(FOREVER, [], 10)
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):  # running: interrupted
            await storage.query(FOREVER, [], 10)
    assert storage._queries == {}
    await storage.checkpoint()  # no transaction of it is left open
    assert await rows(storage, "SELECT 42") == [[42]]


async def test_running_out_of_memory_is_no_fault_of_the_sql(storage: DuckDBStorage) -> None:
    sql = "SELECT length(string_agg(repeat('x', 1000 + (range % 7)::INT), ',')) FROM range(1000000)"
    with pytest.raises(StorageOutOfMemory, match=r"memory_limit is 128MB\): Out of Memory Error: failed to allocate"):
        await storage.query(sql, [], 10)
    assert await rows(storage, "SELECT 42") == [[42]]
