"""Opening the database file: DuckDB's settings, the one-owner lock, the schema brought up to date.

Light on imports (DuckDB's engine, the migrations, the errors, the template): the host runs it in a
thread while the runtime imports (`storage.early`), and everything imported here would be imported
twice over, one GIL for both."""

from __future__ import annotations

import os
from typing import Any

from openvaala_lsp.storage import template
from openvaala_lsp.storage.engine import duckdb
from openvaala_lsp.storage.errors import StorageLockedError
from openvaala_lsp.storage.migrations import migrate

Connections = tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]

CONFIG: dict[str, Any] = {
    "memory_limit": "128MB",
    "threads": 1,
    "async_threads": 0,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # the runtime never reads or writes other files through DuckDB; off, user SQL cannot either (sql.py)
    "enable_external_access": False,
}


def connect(path: str, config: dict[str, Any], *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """DuckDB's connection to the file; its refusal of a file another process holds is a
    StorageLockedError naming the holder."""
    try:
        return duckdb.connect(path, read_only=read_only, config=config)
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        raise StorageLockedError.from_message(path, str(exc)) from None


def connect_file(path: str) -> Connections:
    """The connection and the writer's and reader's cursors of the file at `path`, migrated; a new
    file starts as a copy of the migrated template (`storage.template`)."""
    copied = path != ":memory:" and not os.path.exists(path) and template.copy_to(path)
    con = connect(path, CONFIG)
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")  # views and casts of TIMESTAMPTZ work in UTC
        migrate(con, path)
        if copied:
            con.execute("UPDATE schema_version SET applied_at = now() WHERE applied_at IS NULL")
        # both cursors are made here: creating one from another thread would overlap calls on `con`
        return con, con.cursor(), con.cursor()
    except BaseException:
        con.close()
        raise
