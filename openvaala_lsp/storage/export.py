"""`openvaala export --parquet DIR`: the analytic views as Parquet, partitioned by day, incrementally.

Layout: `DIR/<table>/day=YYYY-MM-DD/<user>@<machine>-<db>-<number>_<i>.parquet`, with `day` also inside
the files (engines that do not read Hive partitions still have it), and `machine` and `user` columns,
so many people's exports pool in one folder or bucket. Tables:
- `model_calls`: `model_calls_v`, the calls appended since the last export to DIR, by `seq`, which
  grows in commit order (one writer), so a snapshot sees every call up to its largest `seq`;
- `turns`: `turns_v`, the turns that have ended and were not exported to DIR yet;
- `compactions`: `compactions_v`, likewise;
- `file_changes`: `file_changes_v`, the changes not exported to DIR yet (paths and line counts, no diffs).
A turn changes until it ends, and a fork copies turns and items with their old times, so neither a
sequence nor a time says what is new there: the ids exported are kept (`exported_rows`) and left out
next time (a file change's `seq` as its id). Aggregates (`usage_daily`, `lines_changed_daily`,
`sessions_tree`, `context_usage`) are not exported: increments of them would add up wrong, and each
is one query over the tables above.

The watermark is written after the files: the ids (in chunks, so a turn's writes never queue behind
a first export's hundred thousand rows), then the row of `exports`, which makes them count. An
export that fails leaves files under its number, and maybe ids that do not count; the next one, which
has the same number, removes both first. No item payloads are exported (no prompts, answers or tool
output); error messages are scrubbed of anything shaped like a key, and `redact` drops them (with any
text a provider quoted).

The database runs without external access (`opening.CONFIG`), so the files are written by an
in-memory DuckDB of their own, reading the snapshot's rows over the Arrow C stream interface.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
from pathlib import Path
from typing import Any

import attrs
import duckdb

from openvaala_lsp.storage import opening
from openvaala_lsp.storage.codec import Row
from openvaala_lsp.storage.interfaces import ExportedTable, ExportOutcome, ExportRequest

log = logging.getLogger(__name__)

EXPORT_COLUMNS = (
    "destination",
    "number",
    "exported_at",
    "machine",
    "user_name",
    "redacted",
    "calls_through_seq",
    "model_calls",
    "turns",
    "compactions",
)
EXPORTED_ROW_COLUMNS = ("destination", "number", "kind", "id")
# a key in an error message: `sk-...`, `Bearer ...`, `api_key=...`, `x-api-key: ...`
_SECRET = r"(?i)(sk-|bearer\s+|api[_-]?key[\"']?\s*[=:]\s*[\"']?|key-)[A-Za-z0-9._~+/=-]{6,}"
# DuckDB's memory limit while an export runs, for the whole database: turns_v sums every call per turn
# in memory (~0.5 KB a turn, not spilled: 200k turns fail under 64 MB, measured), beside whatever
# reports run meanwhile. The usual limit comes back after it, which also evicts the blocks it cached.
EXPORT_MEMORY_LIMIT = "1GB"

WRITER_CONFIG: dict[str, Any] = {
    "threads": 1,
    "memory_limit": "256MB",
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


@attrs.frozen
class _Table:
    name: str
    view: str
    key: str  # the view's id column
    new: str  # the ids to export: with `?` for the last call exported and the last now, or the destination
    redacted: tuple[str, ...]  # text columns dropped by `redact` (NULL), scrubbed otherwise
    tracked: bool  # its ids go to `exported_rows`
    # the rows to export as a condition on the view, with the same `?`s as `new`; by default the ids
    # `new` lists, which DuckDB joins through a hash table of them (a million calls: over 48 MB, where
    # the range of model_calls needs under 24, measured)
    condition: str = ""

    def rows(self) -> str:
        return self.condition or f"{self.key} IN ({self.new})"


# ids of an export whose `exports` row is missing (it failed part way) do not count
_NOT_EXPORTED = (
    "NOT IN (SELECT r.id FROM exported_rows r JOIN exports e USING (destination, number)"
    " WHERE r.destination = ? AND r.kind = '{kind}')"
)
TABLES = (
    _Table(
        "model_calls",
        "model_calls_v",
        "seq",
        "SELECT seq FROM model_calls WHERE seq > ? AND seq <= ?",
        ("error",),
        False,
        "seq > ? AND seq <= ?",  # a range the scan filters: no hash table of a million ids
    ),
    _Table(
        "turns",
        "turns_v",
        "turn_id",
        f"SELECT id FROM turns WHERE status <> 'running' AND id {_NOT_EXPORTED.format(kind='turns')}",
        ("error",),
        True,
    ),
    _Table(
        "compactions",
        "compactions_v",
        "item_id",
        f"SELECT item_id FROM items WHERE type = 'compaction' AND item_id {_NOT_EXPORTED.format(kind='compactions')}",
        (),
        True,
    ),
    # no watermark column of its own in `exports`: its rows' seqs are tracked like ids
    _Table(
        "file_changes",
        "file_changes_v",
        "seq",
        f"SELECT seq FROM file_changes WHERE seq::VARCHAR {_NOT_EXPORTED.format(kind='file_changes')}",
        (),
        True,
    ),
)


def safe_name(text: str) -> str:
    """`text` as a file name part: letters, digits, `.`, `_` and `-` kept, anything else `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:64] or "_"


def export(cursor: duckdb.DuckDBPyConnection, database: str, request: ExportRequest, now: dt.datetime) -> ExportOutcome:
    """Writes what is new for `request.directory` (blocking: run it in a thread of its own). Reads one
    snapshot of the database on `cursor`, which it closes."""
    try:
        cursor.execute(f"SET memory_limit = '{EXPORT_MEMORY_LIMIT}'")
        cursor.execute("BEGIN TRANSACTION READ ONLY")
        number, last_seq = _watermark(cursor, request.directory)
        (through_seq,) = _one(cursor, "SELECT coalesce(max(seq), ?) FROM model_calls", [last_seq])
        prefix = f"{safe_name(request.user)}@{safe_name(request.machine)}-{_database_tag(database)}-{number:06d}"
        writer = duckdb.connect(":memory:", config=WRITER_CONFIG)
        exported: list[Row] = []
        try:
            writer.execute("SET TimeZone = 'UTC'")
            tables = []
            for table in TABLES:
                bounds = [request.directory] if table.tracked else [last_seq, through_seq]
                if table.tracked:  # the same snapshot gives the COPY below the same rows
                    ids = cursor.execute(table.new, bounds).fetchall()
                    exported += [(request.directory, number, table.name, str(key)) for (key,) in ids]
                tables.append(_write(cursor, writer, table, bounds, request, Path(request.directory), prefix))
        finally:
            writer.close()
        counts = {table.name: table.rows for table in tables}
        watermark = (
            request.directory,
            number,
            now,
            request.machine,
            request.user,
            request.redact,
            through_seq,
            counts["model_calls"],
            counts["turns"],
            counts["compactions"],
        )
        return ExportOutcome(number=number, tables=tables, watermark=watermark, exported=exported)
    finally:
        try:
            cursor.execute("ROLLBACK")  # the read transaction (if it began), before the limit goes back
        except duckdb.Error:
            pass
        try:
            cursor.execute(f"SET memory_limit = '{opening.CONFIG['memory_limit']}'")  # every store's
        except duckdb.Error as exc:  # a report still holds more: the lifted limit stays, which only costs memory
            log.warning("the export could not put DuckDB's memory limit back: %s", exc)
        cursor.close()


def forget_unfinished(cursor: duckdb.DuckDBPyConnection, destination: str) -> None:
    """Removes the ids of exports to `destination` that never recorded their `exports` row."""
    cursor.execute(
        "DELETE FROM exported_rows WHERE destination = ? AND number NOT IN"
        " (SELECT number FROM exports WHERE destination = ?)",
        [destination, destination],
    )


def _watermark(cursor: duckdb.DuckDBPyConnection, destination: str) -> tuple[int, int]:
    """The next export's number and the last call exported."""
    number, seq = _one(
        cursor,
        "SELECT coalesce(max(number), 0) + 1, coalesce(max(calls_through_seq), 0) FROM exports WHERE destination = ?",
        [destination],
    )
    return int(number), int(seq)


def _write(
    cursor: duckdb.DuckDBPyConnection,
    writer: duckdb.DuckDBPyConnection,
    table: _Table,
    bounds: list[Any],
    request: ExportRequest,
    directory: Path,
    prefix: str,
) -> ExportedTable:
    target = directory / table.name
    for stale in target.glob(f"day=*/{prefix}_*.parquet"):  # left by a failed try of this export
        stale.unlink()
    text = ", ".join(
        f"NULL::VARCHAR AS {c}"
        if request.redact
        else f"regexp_replace({c}, '{_literal(_SECRET)}', '\\1[redacted]', 'g') AS {c}"
        for c in table.redacted
    )
    replace = f" REPLACE ({text})" if text else ""
    rows = cursor.sql(
        f'SELECT ? AS machine, ? AS "user", *{replace} FROM {table.view} WHERE {table.rows()}',
        params=[request.machine, request.user, *bounds],
    )
    source = _Stream(rows)  # noqa: F841 (read by name in the COPY below)
    os.makedirs(target, exist_ok=True)
    try:
        (count, files) = writer.execute(
            f"COPY (SELECT * FROM source) TO '{_literal(str(target))}' (FORMAT parquet, PARTITION_BY (day),"
            f" WRITE_PARTITION_COLUMNS true, FILENAME_PATTERN '{_literal(prefix)}_{{i}}', OVERWRITE_OR_IGNORE,"
            " RETURN_FILES true)"
        ).fetchall()[0]
    except duckdb.IOException as exc:  # the files, not the database: the caller's OSError
        raise OSError(str(exc)) from None
    return ExportedTable(name=table.name, rows=int(count), files=len(files))


class _Stream:
    """A relation as an Arrow C stream only: the writer's DuckDB scans it without knowing whose it is."""

    def __init__(self, relation: duckdb.DuckDBPyRelation) -> None:
        self._relation = relation

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._relation.__arrow_c_stream__(requested_schema)


def _one(cursor: duckdb.DuckDBPyConnection, sql: str, parameters: list[Any]) -> tuple[Any, ...]:
    (row,) = cursor.execute(sql, parameters).fetchall()  # fetched whole: the cursor is used again
    return tuple(row)


def _database_tag(path: str) -> str:
    """Tells apart two databases of one user on one machine exporting into one folder."""
    return hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:8]


def _literal(text: str) -> str:
    return text.replace("'", "''")
