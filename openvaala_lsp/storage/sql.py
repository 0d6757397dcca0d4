"""Read-only SQL on the history database: `openvaala/query` in the runtime (also what `openvaala sql`
asks, through the runtime host).

Three guards, each of which alone stops a write (measured with DuckDB 2.0.1):
1. DuckDB's own parser (`extract_statements`) must find exactly one statement, of type SELECT (what
   WITH, VALUES, `FROM t`, DESCRIBE, SHOW and SUMMARIZE parse to as well) or EXPLAIN of a SELECT
   (EXPLAIN ANALYZE runs its statement, so the statement after EXPLAIN is parsed too).
2. The statement runs in `BEGIN TRANSACTION READ ONLY`, which DuckDB enforces and which is rolled
   back: INSERT, nextval(), a DELETE inside a WITH (it parses as SELECT) and EXPLAIN ANALYZE DELETE
   all fail with "transaction is launched in read-only mode".
3. The database runs with `enable_external_access = false` (`opening.CONFIG`):
   file readers (read_csv, read_parquet, read_text, ...), COPY, ATTACH, INSTALL/LOAD and Python
   replacement scans fail with a permission error. DuckDB has this setting per database, not per
   connection, and refuses to turn it back on while the database runs. It still lets a reader see
   the database's own files (`allowed_paths`: the file, its WAL, its temp directory): bytes the
   user can read anyway.

A query's read transaction never blocks the writer (MVCC); it only defers DuckDB's automatic
checkpoint, which DuckDB skips while another transaction is open (measured: commits go on, the WAL
grows past `checkpoint_threshold` and is folded in by the first commit after the query ends).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any

import duckdb

from openvaala_lsp.storage.errors import QueryCancelled, QueryError, StorageError
from openvaala_lsp.storage.interfaces import MAX_RESULT_BYTES, SqlColumn, SqlResult
from openvaala_lsp.storage.opening import out_of_memory
from openvaala_lsp.storage.sql_values import Convert, converter, type_name
from openvaala_lsp.wire import compact_json

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 500
MIN_VALUE_BYTES = 256  # a value's share of `MAX_RESULT_BYTES` when there are thousands of columns
CUT_MARKER_BYTES = 80  # "…[cut: the first 2,796,120 of 50,000,000 characters of its JSON]", with room
FETCH_ROWS = 1000
INTERRUPT_RETRY = 0.02
INTERRUPT_ATTEMPTS = 500  # about 10 s; DuckDB checks for an interrupt at every vector, so never needed
# DuckDB failing, not the statement: these are no `invalidParams` (running out of memory says so)
_NOT_THE_SQL = (duckdb.InternalException, duckdb.FatalException, duckdb.IOException)
ALLOWED = "SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN"
# DuckDB's statement types by what the user wrote, where the two differ
_LABELS = {
    "LOAD": "INSTALL or LOAD",
    "SET": "SET, RESET or USE",
    "VACUUM": "VACUUM or ANALYZE",
    "MERGE_INTO": "MERGE",
    "VARIABLE_SET": "SET VARIABLE",
    "CREATE_FUNC": "CREATE FUNCTION",
    "COPY_DATABASE": "COPY FROM DATABASE",
    "MULTI": "a statement of several steps",
    "UNKNOWN": "a statement of another kind",
}
_HINTS = {
    "PRAGMA": "; for a table's columns use DESCRIBE <table> or SELECT * FROM duckdb_columns()",
    "CALL": "; table functions read with SELECT * FROM <function>(...)",
    "MULTI": "; a PIVOT runs as one SELECT when it lists its values: PIVOT t ON col IN ('a', 'b') USING ...",
}


def check_read_only(cursor: duckdb.DuckDBPyConnection, sql: str, parameter_count: int) -> None:
    """Raises QueryError unless `sql` is exactly one read-only statement taking `parameter_count`
    positional parameters. Parses only; runs nothing."""
    statement = _one_statement(cursor, sql)
    kind = _type(statement)
    refused = f"only read-only statements run here ({ALLOWED}); this"
    if kind == "EXPLAIN":
        explained = _type(_one_statement(cursor, _after_explain(statement.query)))
        if explained != "SELECT":
            raise QueryError("sql", f"{refused} explains {_label(explained)}")
    elif kind != "SELECT":
        raise QueryError("sql", f"{refused} is {_label(kind)}{_HINTS.get(kind, '')}")
    names = statement.named_parameters
    if any(not name.isdigit() for name in names):
        raise QueryError("sql", "named parameters ($name) are not supported: use ? or $1, $2, ... with `parameters`")
    expected = max((int(name) for name in names), default=0)
    if parameter_count != expected:
        raise QueryError("parameters", f"the statement takes {expected} parameters, got {parameter_count}")


class QueryJob:
    """One query on a cursor of its own: `run` in a worker thread, `cancel` from any thread.

    A DuckDB interrupt only reaches a query that is executing, so `cancel` also leaves a flag that
    `run` checks before it starts and between fetches; a caller that must see the query stop calls
    `cancel` again until `run` has returned (see `DuckDBStorage.query`).
    """

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        sql: str,
        parameters: list[Any],
        limit: int,
        *,
        max_bytes: int = MAX_RESULT_BYTES,
    ) -> None:
        self._cursor = cursor
        self._sql = sql
        self._parameters = parameters
        self._limit = limit
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._cancelled = False
        self._closed = False

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if not self._closed:
                self._cursor.interrupt()

    def close(self) -> None:
        """Closes the cursor (idempotent); `run` does it when it ends."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._cursor.close()

    def run(self) -> SqlResult:
        cursor = self._cursor
        try:
            self._check_cancelled()
            check_read_only(cursor, self._sql, len(self._parameters))
            cursor.execute("BEGIN TRANSACTION READ ONLY")
            try:
                cursor.execute(self._sql, self._parameters)
                description = cursor.description or []
                columns = [SqlColumn(name=str(d[0]), type=type_name(d[1])) for d in description]
                rows, truncated = self._fetch([converter(d[1]) for d in description])
            finally:
                _rollback(cursor)
            return SqlResult(columns=columns, rows=rows, truncated=truncated)
        except duckdb.Error as exc:
            if self._cancelled or isinstance(exc, duckdb.InterruptException):
                raise QueryCancelled() from None
            if isinstance(exc, duckdb.OutOfMemoryException):
                raise out_of_memory(exc) from None
            if isinstance(exc, _NOT_THE_SQL):
                raise StorageError(f"the database failed: {_bounded(str(exc))}") from None
            raise QueryError("sql", _bounded(str(exc))) from None
        finally:
            self.close()

    def _check_cancelled(self) -> None:
        if self._cancelled:
            raise QueryCancelled()

    def _fetch(self, converters: list[Convert]) -> tuple[list[list[Any]], bool]:
        """At most `limit` rows and `max_bytes` of JSON as the wire encodes it; True if more rows
        existed or a value was cut. DuckDB hands a row over whole, so rows come a few at a time while
        they are big, and a value takes at most its column's share of the budget: a first row of six
        50 MB strings fits too. Fetches at most one row past the limit: DuckDB computes results as
        they are fetched."""
        rows: list[list[Any]] = []
        share = max(MIN_VALUE_BYTES, self._max_bytes // max(1, len(converters)))
        size = 0
        cut = False
        while True:
            self._check_cancelled()
            average = size // len(rows) if rows else self._max_bytes  # one row first, then as many as fit
            fit = (self._max_bytes - size) // average
            chunk = self._cursor.fetchmany(max(1, min(fit, FETCH_ROWS, self._limit + 1 - len(rows))))
            if not chunk:
                return rows, cut
            for raw in chunk:
                if len(rows) == self._limit:
                    return rows, True
                row = []
                for convert, value in zip(converters, raw, strict=True):
                    kept, was_cut = _fit(None if value is None else convert(value), share)
                    row.append(kept)
                    cut = cut or was_cut
                row_bytes = len(compact_json.dumps(row)) + 1  # and its comma
                if rows and size + row_bytes > self._max_bytes:
                    return rows, True
                rows.append(row)
                size += row_bytes


def _fit(value: Any, share: int) -> tuple[Any, bool]:
    """`value`, or, when its JSON takes more than `share` bytes, a string of its start that says it was
    cut (a list or object as its JSON text); True if cut. A long string is never encoded whole."""
    if isinstance(value, str):
        if len(value) * 6 + 2 <= share or (len(value) < share and _json_bytes(value) <= share):  # 6: \u001f
            return value, False
        text, of = value, "characters"
    elif isinstance(value, (list, dict)):
        encoded = compact_json.dumps(value)
        if len(encoded) <= share:
            return value, False
        text, of = encoded.decode(), "characters of its JSON"
    else:
        return value, False  # a number, a boolean: a few bytes
    room = share - CUT_MARKER_BYTES
    keep = room
    while (measured := _json_bytes(text[:keep])) > room:  # escapes and multi-byte characters take more
        keep = min(keep - 1, keep * room // measured)
    return f"{text[:keep]}…[cut: the first {keep:,} of {len(text):,} {of}]", True


def _json_bytes(text: str) -> int:
    return len(compact_json.dumps(text))


async def stop(job: QueryJob, done: Future[SqlResult]) -> None:
    """Interrupts `job` until the thread running it (`done`) lets go; one interrupt can land before
    DuckDB has started the query. A job still waiting for a thread never starts."""
    done.cancel()
    for _ in range(INTERRUPT_ATTEMPTS):
        if done.done():
            return
        job.cancel()
        await asyncio.sleep(INTERRUPT_RETRY)
    log.warning("a query did not stop within %.0f s of its interrupt", INTERRUPT_ATTEMPTS * INTERRUPT_RETRY)


def _one_statement(cursor: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    try:
        statements = cursor.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError("sql", _bounded(str(exc))) from None
    if not statements:
        raise QueryError("sql", "no SQL statement")
    if len(statements) > 1:
        raise QueryError("sql", f"one statement at a time: found {len(statements)}")
    return statements[0]


def _type(statement: duckdb.Statement) -> str:
    try:
        return statement.type.name
    except ValueError:  # a type this duckdb module has no name for (e.g. UPDATE EXTENSIONS)
        return "UNKNOWN"


def _label(kind: str) -> str:
    return _LABELS.get(kind, kind)


def _after_explain(sql: str) -> str:
    """The statement that `EXPLAIN [ANALYZE] [(options)]` applies to, found with DuckDB's tokenizer."""
    tokens = [(offset, kind) for offset, kind in duckdb.tokenize(sql) if kind != duckdb.token_type.comment]
    ends = [offset for offset, _ in tokens[1:]] + [len(sql)]
    words = [(offset, sql[offset:end].strip()) for (offset, _), end in zip(tokens, ends, strict=True)]
    index, depth = 1, 0  # words[0] is EXPLAIN
    while index < len(words):
        offset, word = words[index]
        if depth == 0 and word.upper() not in ("ANALYZE", "ANALYSE") and not word.startswith("("):
            return sql[offset:]
        depth += word.count("(") - word.count(")")
        index += 1
    return ""


def _rollback(cursor: duckdb.DuckDBPyConnection) -> None:
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction left: BEGIN failed, or an interrupt ended it


def _bounded(message: str) -> str:
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"
