"""`openvaala usage`, `openvaala export` and `openvaala sql --format/--schema` as a user runs them:
through the runtime host, started for them when no editor is open, and never holding up a turn that
streams meanwhile."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import duckdb
from bench_usage import usage_data
from fake_provider import ChatStream, FakeProviderServer
from processes import openvaala
from turn_helpers import Session, start, text_of

WAIT = 60.0


async def openvaala_cli(home: Path, *args: str) -> tuple[int, str, str]:
    return await openvaala(home, *args, wait=WAIT)


REFUSED = {
    "UPDATE conversations SET title = 'x'": "this is UPDATE",
    "ATTACH 'x.duckdb'": "this is ATTACH",
    "COPY model_calls TO 'x.parquet'": "this is COPY",
    "INSTALL httpfs": "this is INSTALL or LOAD",
    "LOAD httpfs": "this is INSTALL or LOAD",
    "SELECT 1; SELECT 2": "one statement at a time: found 2",
}


async def test_reports_sql_formats_and_exports_with_no_editor_open(home: Path, tmp_path: Path) -> None:
    usage_data.generate(str(home / "openvaala.duckdb"), 20_000)
    with duckdb.connect(str(home / "openvaala.duckdb"), read_only=True) as con:
        expected = dict(con.sql("SELECT model, sum(total_tokens) FROM model_calls GROUP BY model").fetchall())
    code, out, err = await openvaala_cli(home, "usage", "model", "--format", "json")
    assert (code, err) == (0, "")
    models = {row["model"]: row for row in json.loads(out)}
    assert {model: row["total_tokens"] for model, row in models.items()} == expected
    assert models["gemma3-270m"]["cost"] is None and models["gpt-5"]["currency"] == "USD"

    code, out, err = await openvaala_cli(home, "usage", "--since", "2025-01-10", "--until", "2025-01-11")
    assert code == 0 and "usage per UTC day, since 2025-01-10, before 2025-01-12" in out
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[3:5]] == ["2025-01-10", "2025-01-11"] and lines[-3].startswith("total")
    assert "█" in lines[3] and "calls have no price" in out
    code, out, err = await openvaala_cli(
        home, "usage", "conversation", "--limit", "3", "--format", "csv", "--bar", "cost"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 3 and rows[0]["title"].startswith("Conversation ")
    code, _, err = await openvaala_cli(home, "usage", "--plot", str(tmp_path / "chart.png"), "--until", "2025-01-05")
    assert code == 0 and f"plot: {tmp_path / 'chart.png'}" in err
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG")
    code, out, err = await openvaala_cli(home, "usage", "agent", "--plot", str(tmp_path / "agents.svg"))
    assert code == 0 and (tmp_path / "agents.svg").read_text().startswith("<?xml")
    code, _, err = await openvaala_cli(home, "usage", "--plot", str(tmp_path / "chart.gif"))
    assert code == 2 and "--plot: makes a .png or an .svg file" in err

    code, out, err = await openvaala_cli(
        home, "sql", "SELECT day, calls FROM usage_daily ORDER BY ALL LIMIT 2", "--format", "csv"
    )
    assert code == 0 and out.splitlines()[0] == "day,calls"
    code, out, err = await openvaala_cli(home, "sql", "--schema")
    assert code == 0 and "model_calls_v (view): One row per model provider call" in out
    assert "  cost " in out and "  exports " not in out and "exports (table)" in out
    for sql, refusal in REFUSED.items():
        code, out, err = await openvaala_cli(home, "sql", sql)
        assert code == 1 and refusal in err, sql

    pool = tmp_path / "pool"
    code, out, err = await openvaala_cli(home, "export", "--parquet", str(pool), "--user", "alice", "--machine", "m1")
    assert (code, err) == (0, "") and out.startswith(f"export 1 to {pool} as alice@m1: 20,000 model_calls")
    code, out, err = await openvaala_cli(home, "export", "--parquet", str(pool), "--user", "alice", "--machine", "m1")
    assert code == 0 and "export 2" in out and ": 0 model_calls (0 files), 0 turns" in out
    assert " started (pid " in (home / "logs" / "host.log").read_text()  # the first report started a host


async def test_two_users_exports_pool_in_one_folder(tmp_path: Path) -> None:
    """The README's worked example: alice and bob export into one folder; DuckDB sums both."""
    pool = tmp_path / "pool"
    for user, calls in (("alice", 5_000), ("bob", 3_000)):
        home = tmp_path / user
        home.mkdir()
        usage_data.generate(str(home / "openvaala.duckdb"), calls)
        code, _, err = await openvaala_cli(home, "export", "--parquet", str(pool), "--user", user, "--redact")
        assert code == 0, err
    with duckdb.connect() as con:
        per_user = con.sql(
            f"""SELECT "user", count(*) AS calls, count(error) AS errors
            FROM read_parquet('{pool}/model_calls/**/*.parquet') GROUP BY ALL ORDER BY ALL"""
        ).fetchall()
    assert per_user == [("alice", 5_000, 0), ("bob", 3_000, 0)]  # redacted: no error text


async def test_reports_through_the_host_never_stall_a_streaming_turn(
    home: Path, workspace: Path, provider: FakeProviderServer, tmp_path: Path
) -> None:
    """A turn streams 400 deltas, one every 10 ms, while the standard reports run on 1M calls through
    the host again and again (and an export). Every delta arrives; the gaps between them are printed,
    with those of the same turn streamed alone (no timing is asserted)."""
    usage_data.generate(str(home / "openvaala.duckdb"), 1_000_000)
    lsp = await start(home, workspace, provider)
    try:
        arrivals: list[float] = []
        on_message = lsp._on_message

        async def timed(message: dict[str, Any]) -> None:
            if message.get("method") == "openvaala/sessionEvent":
                if any(event["type"] == "itemDelta" for event in message["params"]["events"]):
                    arrivals.append(time.monotonic())
            await on_message(message)

        lsp._on_message = timed  # type: ignore[method-assign]
        session = await Session.open(lsp)

        async def stream_turn(count: int) -> list[float]:
            arrivals.clear()
            script = ChatStream()
            for n in range(400):
                script.text(f"w{n} ").pause(0.01)
            provider.enqueue("openai-chat", script.finish().response())
            await session.submit("stream")
            turn = await session.turn_completed(count)
            assert turn["status"] == "completed"
            assert text_of((await session.items())[-1]) == "".join(f"w{n} " for n in range(400))
            return [b - a for a, b in itertools.pairwise(arrivals)]

        alone = await stream_turn(1)

        reports = 0
        stop = asyncio.Event()

        async def report_loop() -> None:
            nonlocal reports
            names = ["day", "model", "project", "conversation", "agent"]
            while not stop.is_set():
                code, _, err = await openvaala_cli(home, "usage", names[reports % len(names)], "--format", "csv")
                assert code == 0, err
                reports += 1

        loops = [asyncio.create_task(report_loop()) for _ in range(2)]
        export = asyncio.create_task(openvaala_cli(home, "export", "--parquet", str(tmp_path / "pool")))
        try:
            with_reports = await stream_turn(2)
        finally:
            stop.set()
            await asyncio.gather(*loops)
        code, out, err = await export
        assert code == 0 and "1,000,00" in out, err  # the generated calls and the turns' own
        gaps = (
            f"turn alone: max {max(alone) * 1000:.1f} ms, median {statistics.median(alone) * 1000:.1f} ms; with"
            f" {reports} reports and an export of 1M calls running: max {max(with_reports) * 1000:.1f} ms,"
            f" median {statistics.median(with_reports) * 1000:.1f} ms"
        )
        print(f"\ndelta gaps, {gaps}")  # noqa: T201 (the measurement is the point; `pytest -s` shows it)
        assert reports >= 2
    finally:
        await lsp.shutdown()
