"""The Parquet export has the file changes (`file_changes_v`, paths and counts, never a diff), each
once per destination: the next export to the same folder writes only the newer ones."""

from __future__ import annotations

from pathlib import Path

import duckdb
from test_storage_file_changes import WORKSPACE, edit_of, opened, result

from openvaala_lsp.storage.interfaces import ExportRequest


async def test_file_changes_are_exported_once_without_their_diffs(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    await storage.append_item(result("item_1", [edit_of(f"{WORKSPACE}/a.py", 10), edit_of(f"{WORKSPACE}/b.py", 10)]))
    out = tmp_path / "pool"
    first = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
    assert {t.name: t.rows for t in first.tables}["file_changes"] == 2
    await storage.append_item(result("item_2", [edit_of(f"{WORKSPACE}/c.py", 10)]))
    second = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
    third = await storage.export_usage(ExportRequest(directory=str(out), machine="m1", user="alice"))
    assert [{t.name: t.rows for t in e.tables}["file_changes"] for e in (second, third)] == [1, 0]
    elsewhere = await storage.export_usage(ExportRequest(directory=str(tmp_path / "other"), machine="m1", user="alice"))
    assert {t.name: t.rows for t in elsewhere.tables}["file_changes"] == 3
    await storage.close()
    with duckdb.connect() as con:
        scan = f"read_parquet('{out}/file_changes/**/*.parquet', hive_partitioning = true)"
        rows = con.sql(
            f'SELECT machine, "user", path, kind, additions, deletions, workspace, model FROM {scan} ORDER BY seq'
        ).fetchall()
        columns = [name for name, *_ in con.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()]
    assert rows == [
        ("m1", "alice", f"{WORKSPACE}/{name}.py", "update", 2, 1, WORKSPACE, "gpt-5") for name in ("a", "b", "c")
    ]
    assert "diff" not in columns and "day" in columns
