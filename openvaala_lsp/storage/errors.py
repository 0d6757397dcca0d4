"""Errors raised by the storage layer (import-light: no DuckDB here)."""

from __future__ import annotations

import re

__all__ = [
    "InvalidCursor",
    "QueryCancelled",
    "QueryError",
    "StorageClosedError",
    "StorageError",
    "StorageLockedError",
    "StorageOutOfMemory",
]


class InvalidCursor(ValueError):
    """A cursor that this storage did not produce (its message says what is wrong)."""


class StorageError(Exception):
    """The store cannot serve the request (closed, written by a newer version, ...)."""


class StorageLockedError(StorageError):
    """Another process holds the database file open; DuckDB allows one read-write owner per file."""

    def __init__(self, path: str, pid: int | None = None, holder: str | None = None) -> None:
        self.path = path
        self.pid = pid
        self.holder = holder
        who = "another process"
        if pid is not None:
            who = f"process {pid}" + (f" ({holder})" if holder else "")
        super().__init__(f"storage file {path} is locked by {who}; only one process can open it at a time")

    @classmethod
    def from_message(cls, path: str, message: str) -> StorageLockedError:
        """From DuckDB's refusal, with the holder when it names one."""
        match = _LOCK_HOLDER.search(message)
        return cls(path) if match is None else cls(path, int(match["pid"]), match["holder"])


# DuckDB: 'Could not set lock on file "/p/x.duckdb": Conflicting lock is held in /usr/bin/python3 (PID 1234).'
_LOCK_HOLDER = re.compile(r"held in (?P<holder>.+?) \(PID (?P<pid>\d+)\)")


class StorageOutOfMemory(StorageError):
    """DuckDB could not do what was asked within its memory limit; the message names the limit."""

    def __init__(self, limit: str, detail: str) -> None:
        super().__init__(f"the database ran out of memory (its memory_limit is {limit}): {detail}")


class StorageClosedError(StorageError):
    """A call after `close()`."""

    def __init__(self) -> None:
        super().__init__("storage is closed")


class QueryError(StorageError):
    """A query refused or failed because of what was asked; `field` is the request field at fault
    (`sql` or `parameters`) and the message says what is wrong, for the user."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class QueryCancelled(StorageError):
    """The query was interrupted before it finished (its caller went away, or the store closed)."""

    def __init__(self) -> None:
        super().__init__("query cancelled")
