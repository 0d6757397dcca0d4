"""Opening the database file: DuckDB's settings, the one-owner lock, the schema brought up to date."""

from __future__ import annotations

import os
from typing import Any

import duckdb

from openvaala_lsp.paths import make_private
from openvaala_lsp.storage import blobs, journal, writer
from openvaala_lsp.storage.errors import StorageLockedError, StorageOutOfMemory
from openvaala_lsp.storage.migrations import migrate

Connections = tuple[
    duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, journal.Journal | None
]

CONFIG: dict[str, Any] = {
    # what the worst conversations need is half of it (bench/store_memory.py): images and long texts
    # are files, so a row is at most ~16 KiB (`codec.ROW_BYTES`), and 10,000 or 40,000 such rows
    # read under 64 MB, 200 screenshots under 8 MB
    "memory_limit": "128MB",
    "threads": 1,
    "async_threads": 0,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # the runtime never reads or writes other files through DuckDB; off, user SQL cannot either (sql.py)
    "enable_external_access": False,
}


def out_of_memory(exc: duckdb.OutOfMemoryException) -> StorageOutOfMemory:
    """DuckDB's error with the limit it ran into, for the user (its first line says what it failed at)."""
    return StorageOutOfMemory(CONFIG["memory_limit"], str(exc).partition("\n")[0])


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
    """The connection, the writer's and reader's cursors and the journal of the file at `path`,
    migrated, with what the journal holds committed. A database in memory has no journal."""
    con = connect(path, CONFIG)
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")  # views and casts of TIMESTAMPTZ work in UTC
        migrate(con, path)
        opened = None
        if path != ":memory:":
            opened = open_journal(con, path)
            keep_private(path)
            blobs.BlobStore(blobs.directory_of(path)).sweep(con)
        # both cursors are made here: creating one from another thread would overlap calls on `con`
        return con, con.cursor(), con.cursor(), opened
    except BaseException:
        con.close()
        raise


def keep_private(path: str) -> None:
    """The database's files closed to other users, also those an older openvaala left open. DuckDB
    makes its WAL as the umask says, anew after each checkpoint: the writer closes each new one."""
    for name in (path, wal_of(path), journal.path_of(path)):
        make_private(name)
    directory = blobs.directory_of(path)
    try:
        opened_up = os.stat(directory).st_mode & 0o077
    except FileNotFoundError:
        return
    if opened_up:
        os.chmod(directory, 0o700)
        for entry in os.scandir(directory):
            make_private(entry.path)


def wal_of(path: str) -> str:
    return f"{path}.wal"


def open_journal(con: duckdb.DuckDBPyConnection, path: str) -> journal.Journal:
    """The journal of the database file `path`, once DuckDB has every record in it."""
    return journal.Journal(journal.path_of(path), *land_journal(con, path))


def land_journal(con: duckdb.DuckDBPyConnection, path: str) -> tuple[str, int]:
    """Commits what the journal of the database file `path` holds and DuckDB lacks (a runtime was
    killed); the database's id and the number of its last record DuckDB has."""
    database_id, seq, missing = _unlanded(con, path)
    if missing:
        writer.replay(con, missing)
        seq = missing[-1][0]
    return database_id, seq


def journal_ahead(con: duckdb.DuckDBPyConnection, path: str) -> bool:
    """The journal of the database file `path` holds writes DuckDB does not have (a runtime was killed)."""
    return bool(_unlanded(con, path)[2])


def _unlanded(con: duckdb.DuckDBPyConnection, path: str) -> tuple[str, int, list[tuple[int, Any]]]:
    """The database's id, its last journal record DuckDB has, and the journal's records after it."""
    database_id, seq = con.execute("SELECT id, seq FROM storage_journal").fetchall()[0]
    records = journal.read(journal.path_of(path), database_id)
    return database_id, seq, [record for record in records if record[0] > seq]
