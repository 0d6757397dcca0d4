"""Persistence: records (conversations, sessions, turns, pending inputs) and logs (items, model calls).

Storage knows nothing about models or JSON-RPC; it stores the attrs types of `openvaala_lsp.model`.
The DuckDB file is `duckdb_store.DuckDBStorage`.
"""

from __future__ import annotations

from openvaala_lsp.storage.errors import InvalidCursor, StorageClosedError, StorageError, StorageLockedError

__all__ = ["InvalidCursor", "StorageClosedError", "StorageError", "StorageLockedError"]
