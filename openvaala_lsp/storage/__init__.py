"""Persistence: records (conversations, sessions, turns, pending inputs) and logs (items, model calls).

Storage knows nothing about models or JSON-RPC; it stores the attrs types of `openvaala_lsp.model`.
`DuckDBStorage` (in `duckdb_store`) is imported on first use: DuckDB's engine costs ~15 ms to load (see `engine`).
"""

from __future__ import annotations

from openvaala_lsp.storage.errors import InvalidCursor, StorageClosedError, StorageError, StorageLockedError

TYPE_CHECKING = False  # not `typing`'s: the host's database thread starts before `typing` is imported
if TYPE_CHECKING:
    from typing import Any

    from openvaala_lsp.storage.duckdb_store import DuckDBStorage

__all__ = ["DuckDBStorage", "InvalidCursor", "StorageClosedError", "StorageError", "StorageLockedError"]


def __getattr__(name: str) -> Any:
    if name == "DuckDBStorage":
        from openvaala_lsp.storage.duckdb_store import DuckDBStorage

        return DuckDBStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
