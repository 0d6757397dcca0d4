"""Errors raised by the storage layer (import-light: no DuckDB here)."""

from __future__ import annotations

from openvaala_lsp.storage.interfaces import InvalidCursor

__all__ = ["InvalidCursor", "StorageClosedError", "StorageError", "StorageLockedError"]


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


class StorageClosedError(StorageError):
    """A call after `close()`."""

    def __init__(self) -> None:
        super().__init__("storage is closed")
