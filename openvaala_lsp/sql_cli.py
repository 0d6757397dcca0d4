"""`openvaala sql`: one read-only statement on the history database, printed as a table.

DuckDB lets one process hold the file, and while editors are open the runtime host holds it. So:
- a host runs: the query goes to it over its socket, as an editor connection (`initialize`,
  `openvaala/query`, `shutdown`, `exit`); the host runs it on a cursor and thread of its own, so it
  neither waits for a turn nor holds one up;
- no host runs: the file is opened read-only here, while a shared hold on `host.lock` keeps hosts
  from starting (`front.connect.reach_or_hold`): an editor that starts meanwhile waits for the
  query instead of failing to open the database. No host is started just to answer a query.
Both paths take the same params and run the same `storage.sql` code: same guards, same values.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from openvaala_lsp import paths
from openvaala_lsp.front.connect import FrontError, HostLink, reach_or_hold
from openvaala_lsp.front.rundir import UnsafeRunDir, ensure_private, run_dir
from openvaala_lsp.front.wire import front_hello
from openvaala_lsp.lsp_peer import LspPeer, PeerError
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import ParamsError, structure

MAX_CELL = 40
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


async def fetch(sql: str, *, parameters: list[Any] | None = None, limit: int | None = None) -> dict[str, Any]:
    """The `openvaala/query` result (wire JSON) for `sql`, from the runtime host or the file."""
    given = {"sql": sql, "parameters": parameters, "limit": limit}
    params = {key: value for key, value in given.items() if value is not None}
    try:
        request = structure(params, api.QueryParams)  # the host checks the same; the file path needs it
        run = run_dir()
        ensure_private(run)
        route = await asyncio.to_thread(reach_or_hold, run, front_hello())
    except ParamsError as exc:
        raise QueryFailed(f"query failed: {_problems(exc.problems)}") from None
    except (FrontError, UnsafeRunDir, OSError) as exc:
        raise QueryFailed(f"cannot reach the openvaala runtime host: {exc}") from None
    if isinstance(route, HostLink):
        return await _via_host(route, params)
    with route:
        return await _on_file(request)


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


def main(sql: str, limit: int | None = None) -> int:
    try:
        result = asyncio.run(fetch(sql, limit=limit))
    except QueryFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the query was interrupted on the way out
        return 130
    try:
        print(render_table(result), flush=True)
    except BrokenPipeError:  # `openvaala sql ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    if result["truncated"]:
        count = len(result["rows"])
        print(f"(the first {count} rows; more exist: narrow the query or raise --limit)", file=sys.stderr)
    return 0


async def _via_host(link: HostLink, params: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    reader.feed_data(link.leftover)
    transport, protocol = await loop.create_unix_connection(
        lambda: asyncio.StreamReaderProtocol(reader), sock=link.sock
    )
    peer = LspPeer(reader, asyncio.StreamWriter(transport, protocol, reader, loop))
    try:
        options = {"openvaala": {"clientName": CLIENT_NAME}}
        await peer.initialize({"clientInfo": {"name": CLIENT_NAME}, "initializationOptions": options})
        result: dict[str, Any] = await peer.request("openvaala/query", params)
        await peer.shutdown()
        return result
    except PeerError as exc:
        if exc.kind == "invalidParams" and exc.problems:
            raise QueryFailed(f"query failed: {_problems(exc.problems)}") from None
        raise QueryFailed(f"query failed: {exc}") from None
    except ConnectionError:
        raise QueryFailed("the openvaala runtime host went away during the query") from None
    finally:
        await peer.close()  # a query still running is interrupted when its connection goes


async def _on_file(request: api.QueryParams) -> dict[str, Any]:
    """Only while no host can start: see the module docstring."""
    from openvaala_lsp.storage.errors import QueryError, StorageLockedError
    from openvaala_lsp.storage.sql import query_file, stop

    path = paths.database_path()
    if not path.exists():
        raise QueryFailed(f"no history yet at {path}")
    limit = request.limit or api.DEFAULT_QUERY_LIMIT
    try:
        job = query_file(str(path), request.sql, request.parameters or [], limit)
    except StorageLockedError as exc:
        holder = "a process outside the runtime host (`openvaala-lsp --standalone`?)"
        raise QueryFailed(f"the history database is held by {holder}: {exc}") from None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="openvaala-sql") as pool:
        done = pool.submit(job.run)
        try:
            result = await asyncio.wrap_future(done)
        except asyncio.CancelledError:  # Ctrl-C
            await stop(job, done)
            raise
        except QueryError as exc:
            raise QueryFailed(f"query failed: {exc.message}") from None
        finally:
            if done.cancelled():
                job.close()
    columns = [{"name": c.name, "type": c.type} for c in result.columns]
    return {"columns": columns, "rows": result.rows, "truncated": result.truncated}


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
