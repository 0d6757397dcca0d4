"""DuckDB's engine, without DuckDB's Python package around it.

`import duckdb` costs ~70 ms: the package re-exports the C++ extension `_duckdb` (~15 ms, all the
storage uses) and loads its relational API and `importlib.metadata` (to read its own version)
besides. A first-ever start of the host pays that on the way to the editor's first answer. The
extension's name is DuckDB's packaging, pinned in pyproject.toml (duckdb 2.0.x);
tests/test_storage.py checks that `duckdb` still re-exports this very module's objects.
"""

from __future__ import annotations

import _duckdb as duckdb
from _duckdb._sqltypes import DuckDBPyType

__all__ = ["DuckDBPyType", "duckdb", "load_relational_api"]


def load_relational_api() -> None:
    """DuckDB's Python package adds the relational API (`connection.sql`, relations) to the engine's
    objects as it loads: only the Parquet export uses it."""
    import duckdb  # noqa: F401
