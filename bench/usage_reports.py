"""The standard usage reports and the Parquet export on a database of N model calls (default 1M).

`python bench/usage_reports.py [--calls N] [--runs R]`: makes the database (bench/usage_data.py), then
times each report of `openvaala usage` warm (after one run), as the runtime runs it: one read-only
statement on a cursor of the runtime's own DuckDB configuration (one thread, 128 MB). Then the export:
the first, of everything, and an incremental one after 1% more calls. Medians of R runs, in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.export import ExportRequest
from openvaala_lsp.storage.reports import REPORTS, Filters, report_sql

_spec = importlib.util.spec_from_file_location("usage_data", Path(__file__).parent / "usage_data.py")
assert _spec is not None and _spec.loader is not None
usage_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(usage_data)

FILTERED = Filters(since=dt.datetime(2025, 3, 1, tzinfo=dt.UTC), project="/home/dev/project3")


async def time_reports(path: Path, runs: int) -> None:
    """Each report as the runtime host answers it (`openvaala usage` asks the host)."""
    print(f"{'report':<14}{'all calls':>12}{'March, one project':>22}   (median of {runs} warm runs, ms)")
    storage = await DuckDBStorage.open(str(path))
    try:
        for report in REPORTS.values():
            cells = []
            for filters in (Filters(), FILTERED):
                sql, parameters = report_sql(report, filters)
                await storage.query(sql, parameters, 100_000)  # warm: the blocks are cached
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    await storage.query(sql, parameters, 100_000)
                    times.append((time.perf_counter() - started) * 1000)
                cells.append(statistics.median(times))
            print(f"{report.name:<14}{cells[0]:>12.1f}{cells[1]:>22.1f}")
    finally:
        await storage.close()


async def time_export(path: Path, calls: int, runs: int) -> None:
    first, incremental = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as scratch:
            copy, out = Path(scratch) / "copy.duckdb", Path(scratch) / "pool"
            shutil.copyfile(path, copy)
            storage = await DuckDBStorage.open(str(copy))
            started = time.perf_counter()
            await storage.export_usage(ExportRequest(directory=str(out), machine="bench", user="bench"))
            first.append(time.perf_counter() - started)
            await storage.close()
            usage_data.add_calls(str(copy), calls, calls // 100, calls)
            storage = await DuckDBStorage.open(str(copy))
            started = time.perf_counter()
            await storage.export_usage(ExportRequest(directory=str(out), machine="bench", user="bench"))
            incremental.append(time.perf_counter() - started)
            await storage.close()
    print(f"export, first ({calls:,} calls, {calls // 5:,} turns): {statistics.median(first) * 1000:.0f} ms")
    print(f"export, incremental ({calls // 100:,} new calls): {statistics.median(incremental) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "usage.duckdb"
        started = time.perf_counter()
        usage_data.generate(str(path), args.calls)
        print(f"{args.calls:,} model calls generated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        asyncio.run(time_reports(path, args.runs))
        asyncio.run(time_export(path, args.calls, max(1, args.runs // 3)))


if __name__ == "__main__":
    main()
