"""`openvaala sql`: one read-only statement on the history database, printed as a table, CSV or JSON;
`openvaala sql --schema`: the tables and views, with what each analytic column means.

The query goes to the runtime host over its socket, as an editor connection (`initialize`,
`openvaala/query`, `shutdown`, `exit`); when no host runs, one is started, as an editor's front
starts it (`front.connect.connect`). The host runs it on a cursor and thread of its own, so it
neither waits for a turn nor holds one up, and the host's guards apply. This command never opens
the database file: a process that held it would keep the host, and so every editor, from starting.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import sys
from typing import Any

from openvaala_lsp.front.connect import FrontError, HostLink, connect
from openvaala_lsp.protocol import api
from openvaala_lsp.rundir import UnsafeRunDir, ensure_private, run_dir
from openvaala_lsp.wire.client import LspClient, ResponseError
from openvaala_lsp.wire.hello import front_hello

MAX_CELL = 40
CUT_MARKER = "…[cut: the first "  # how the host ends a value it cut to fit the answer (`storage.sql`)
CLIENT_NAME = "openvaala sql"
NUMERIC = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "BIGNUM",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
}


class QueryFailed(Exception):
    """The message is for the user."""


def reach_host() -> HostLink:
    """The runtime host past the hello, started when none runs."""
    try:
        run = run_dir()
        ensure_private(run)
        return connect(run, front_hello())
    except (FrontError, UnsafeRunDir, OSError) as exc:
        raise QueryFailed(f"cannot reach the openvaala runtime host: {exc}") from None


async def fetch(
    sql: str,
    *,
    parameters: list[Any] | None = None,
    limit: int | None = None,
    timeout_ms: int | None = None,
    link: HostLink | None = None,
) -> dict[str, Any]:
    """The `openvaala/query` result (wire JSON) for `sql`, over `link` or a new connection to the host."""
    given = {"sql": sql, "parameters": parameters, "limit": limit, "timeoutMs": timeout_ms}
    params = {key: value for key, value in given.items() if value is not None}
    if link is None:  # a thread: connecting waits while a host starts
        link = await asyncio.to_thread(reach_host)
    return await _via_host(link, params)


TIMEOUT_HELP = (
    f"seconds the query may run (default {api.DEFAULT_QUERY_TIMEOUT_MS // 1000}, at most "
    f"{api.MAX_QUERY_TIMEOUT_MS // 1000})"
)


def query_timeout(text: str) -> int:
    """`--timeout SECONDS` as the query's `timeoutMs`."""
    try:
        milliseconds = round(float(text) * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 1 <= milliseconds <= api.MAX_QUERY_TIMEOUT_MS:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {api.MAX_QUERY_TIMEOUT_MS // 1000} seconds")
    return milliseconds


def render_table(result: dict[str, Any]) -> str:
    """A box table like DuckDB's: column names, their types, then the rows (NULL for null)."""
    columns = result["columns"]
    if not columns:
        return "(no columns)"
    names = [str(c["name"]) for c in columns]
    types = [str(c["type"]).lower() for c in columns]
    right = [str(c["type"]).split("(")[0] in NUMERIC for c in columns]
    cells = [[_cell(value) for value in row] for row in result["rows"]]
    widths = [max(len(names[i]), len(types[i]), *(len(row[i]) for row in cells)) for i in range(len(columns))]

    def line(left: str, fill: str, middle: str, end: str) -> str:
        return left + middle.join(fill * (w + 2) for w in widths) + end

    def row(values: list[str], aligns: list[bool | None]) -> str:
        parts = []
        for value, width, align in zip(values, widths, aligns, strict=True):
            parts.append(value.center(width) if align is None else value.rjust(width) if align else value.ljust(width))
        return "│ " + " │ ".join(parts) + " │"

    header: list[bool | None] = [None] * len(columns)  # centred
    out = [line("┌", "─", "┬", "┐"), row(names, header), row(types, header), line("├", "─", "┼", "┤")]
    out += [row(values, list[bool | None](right)) for values in cells]
    out.append(line("└", "─", "┴", "┘"))
    return "\n".join(out)


def render_csv(result: dict[str, Any]) -> str:
    """RFC 4180 CSV with a header row; NULL is an empty field, lists and objects are JSON."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c["name"] for c in result["columns"]])
    for row in result["rows"]:
        writer.writerow(["" if v is None else v if isinstance(v, str) else json.dumps(v) for v in row])
    return out.getvalue().rstrip("\n")


def render_json(result: dict[str, Any]) -> str:
    """One JSON array of objects, a key per column, values as `openvaala/query` gives them."""
    names = [c["name"] for c in result["columns"]]
    return json.dumps([dict(zip(names, row, strict=True)) for row in result["rows"]], ensure_ascii=False, indent=1)


RENDER = {"table": render_table, "csv": render_csv, "json": render_json}
FORMATS = tuple(RENDER)

# Every table and view with its columns; the analytic views' own words from `COMMENT ON` (migration 5)
SCHEMA_SQL = """
SELECT c.table_name AS "table", CASE WHEN v.view_name IS NULL THEN 'table' ELSE 'view' END AS kind,
  c.column_name AS "column", c.data_type AS type, c.comment, coalesce(v.comment, t.comment) AS about
FROM duckdb_columns() c
LEFT JOIN duckdb_views() v ON v.view_name = c.table_name AND v.schema_name = c.schema_name
LEFT JOIN duckdb_tables() t ON t.table_name = c.table_name AND t.schema_name = c.schema_name
WHERE NOT c.internal AND c.schema_name = 'main'
ORDER BY v.comment IS NULL, kind DESC, c.table_name, c.column_index
"""


def render_schema(result: dict[str, Any]) -> str:
    """The views and tables as a reading list: each one's description, then its columns."""
    lines: list[str] = []
    current = None
    rows = result["rows"]
    width = max((len(row[2]) for row in rows), default=0)
    type_width = max((len(row[3]) for row in rows), default=0)
    for table, kind, column, kind_of_value, comment, about in rows:
        if table != current:
            current = table
            lines += [""] if lines else []
            lines.append(f"{table} ({kind})" + (f": {about}" if about else ""))
        doc = f"  {comment}" if comment else ""
        lines.append(f"  {column.ljust(width)}  {kind_of_value.ljust(type_width)}{doc}".rstrip())
    return "\n".join(lines)


def main(
    sql: str | None, limit: int | None = None, fmt: str = "table", schema: bool = False, timeout_ms: int | None = None
) -> int:
    if schema:
        sql, limit = SCHEMA_SQL, api.MAX_QUERY_LIMIT
    assert sql is not None
    try:
        result = asyncio.run(fetch(sql, limit=limit, timeout_ms=timeout_ms, link=reach_host()))
    except QueryFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the query was interrupted on the way out
        return 130
    text = render_schema(result) if schema and fmt == "table" else RENDER[fmt](result)
    if not emit(text):
        return 0
    if result["truncated"]:
        print(truncation_note(result, limit or api.DEFAULT_QUERY_LIMIT), file=sys.stderr)
    return 0


def truncation_note(result: dict[str, Any], limit: int) -> str:
    """What a `truncated` answer left out, and what to change: the rows past `limit`, or what passed
    the answer's size limit (values cut with a marker, or rows left out before `limit`)."""
    count = len(result["rows"])
    if any(isinstance(value, str) and CUT_MARKER in value for row in result["rows"] for value in row):
        return "(values too long for one answer were cut where they say [cut: ...]: select shorter ones, e.g. substr)"
    first = "the first row" if count == 1 else f"the first {count:,} rows"
    if count < limit:
        return f"({first}: the rest passed the answer's size limit; select fewer or shorter columns)"
    return f"({first}; more exist: narrow the query or raise --limit)"


def emit(text: str) -> bool:
    """Prints `text`; False when the reader went away (`openvaala sql ... | head` has what it wanted)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return False
    return True


async def host_request(link: HostLink, client_name: str, method: str, params: dict[str, Any]) -> Any:
    """One request as an editor connection of its own: initialize, `method`, shutdown. Raises ResponseError
    for an error answer, ConnectionError if the host goes; closing the connection cancels the request."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    reader.feed_data(link.leftover)
    transport, protocol = await loop.create_unix_connection(
        lambda: asyncio.StreamReaderProtocol(reader), sock=link.sock
    )
    peer = LspClient(reader, asyncio.StreamWriter(transport, protocol, reader, loop))
    try:
        options = {"openvaala": {"clientName": client_name}}
        await peer.initialize({"clientInfo": {"name": client_name}, "initializationOptions": options})
        result = await peer.request(method, params)
        await peer.shutdown()
        return result
    finally:
        await peer.close()  # a request still running is interrupted when its connection goes


async def _via_host(link: HostLink, params: dict[str, Any]) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await host_request(link, CLIENT_NAME, "openvaala/query", params)
        return result
    except ResponseError as exc:
        if exc.kind == "invalidParams" and exc.problems:
            raise QueryFailed(f"query failed: {_problems(exc.problems)}") from None
        if exc.kind == "internal" and "time limit" in exc.message:  # the host's words name timeoutMs
            seconds = params.get("timeoutMs", api.DEFAULT_QUERY_TIMEOUT_MS) / 1000
            raise QueryFailed(
                f"query failed: it ran past its time limit of {seconds:g} s and was stopped: narrow it, or give it"
                f" more time with --timeout SECONDS (at most {api.MAX_QUERY_TIMEOUT_MS // 1000})"
            ) from None
        if exc.kind == "runtimeStopped":  # stopping, or its runtime could not open the database
            raise QueryFailed(f"the openvaala runtime host could not run the query: {exc.message}") from None
        raise QueryFailed(f"query failed: {exc.message}") from None
    except ConnectionError:
        raise QueryFailed("the openvaala runtime host went away during the query") from None


def _problems(problems: list[str]) -> str:
    """`<problem> @ $.field` as `<problem>` for the SQL itself, `field: <problem>` for the others."""
    shown = []
    for problem in problems:
        message, at, field = problem.rpartition(" @ $.")
        shown.append(problem if not at else message if field == "sql" else f"{field}: {message}")
    return "; ".join(shown)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"
