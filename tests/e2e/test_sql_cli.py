"""`openvaala sql` as a user runs it, a separate process: always through the runtime host, the one
editors hold the database with, or one it starts when none runs (tests/adversarial/test_held_lock.py:
an editor starting meanwhile is answered at once)."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import duckdb
from lsp_client import LspClient
from processes import alive, openvaala

from openvaala_lsp.model import Conversation, Session
from openvaala_lsp.rundir import run_dir
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

WAIT = 20.0


async def openvaala_sql(home: Path, *args: str, idle: float = 1.0) -> tuple[int, str, str]:
    return await openvaala(home, "sql", *args, wait=WAIT, idle=idle)


async def history_with(home: Path, title: str) -> None:
    """A database file as a runtime leaves it, with one conversation; nothing holds it afterwards."""
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    at = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
    await storage.create_conversation(
        Conversation(id="conv_1", title=title, created_at=at, updated_at=at),
        Session(id="sess_1", conversation_id="conv_1", created_at=at),
    )
    await storage.close()


async def host_gone(home: Path) -> None:
    """Waits for the host that `openvaala sql` started to stop (once idle after its last client)."""
    host = int(Path(run_dir({"OPENVAALA_HOME": str(home)}).pid_file).read_text())
    async with asyncio.timeout(WAIT):
        while alive(host):
            await asyncio.sleep(0.05)


async def test_openvaala_sql_prints_rows_while_a_host_holds_the_database(client: LspClient, home: Path) -> None:
    conversation = await client.call("createConversation")
    await client.call("setConversationTitle", {"conversationId": conversation["id"], "title": "held open"})
    code, out, err = await openvaala_sql(home, "SELECT id, title FROM conversations")
    assert (code, err) == (0, "")
    names, types = out.splitlines()[1:3]
    assert names.split() == ["│", "id", "│", "title", "│"] and types.split() == ["│", "varchar", "│", "varchar", "│"]
    assert f"│ {conversation['id']} │ held open │" in out
    code, out, err = await openvaala_sql(home, "DELETE FROM conversations")
    assert code == 1 and out == "" and "query failed: only read-only statements run here" in err
    assert "this is DELETE" in err and "lock" not in err
    assert len((await client.call("listConversations"))["items"]) == 1


async def test_openvaala_sql_starts_the_host_when_none_runs(home: Path) -> None:
    await history_with(home, "from the file")
    # the host waits 5 s for the next client: a loaded machine may take a second to start the next
    idle = 5.0
    code, out, err = await openvaala_sql(home, "SELECT title, archived FROM conversations", idle=idle)
    assert (code, err) == (0, "")
    assert "│ from the file │ false    │" in out
    host = int(Path(run_dir({"OPENVAALA_HOME": str(home)}).pid_file).read_text())
    code, out, err = await openvaala_sql(home, "SELECT * FROM range(5)", "--limit", "2", idle=idle)
    assert code == 0 and [line for line in out.splitlines() if line.startswith("│")][2:] == ["│      0 │", "│      1 │"]
    assert "(the first 2 rows; more exist" in err
    code, _, err = await openvaala_sql(home, "INSERT INTO conversations SELECT * FROM conversations", idle=idle)
    assert code == 1 and "this is INSERT" in err
    log = (home / "logs" / "host.log").read_text()
    assert log.count(" started (pid ") == 1 and f"(pid {host})" in log  # one host served the three
    await host_gone(home)  # and goes when idle, as after an editor


async def test_on_a_fresh_home_the_host_makes_the_empty_history(home: Path) -> None:
    code, out, err = await openvaala_sql(home, "SELECT count(*) AS conversations FROM conversations", "--format", "csv")
    assert (code, out, err) == (0, "conversations\n0\n", "")
    code, out, err = await openvaala_sql(home, "--schema")
    assert code == 0 and "model_calls_v (view): One row per model provider call" in out
    assert (home / "openvaala.duckdb").exists()


async def test_openvaala_sql_names_a_process_holding_the_file_outside_the_host(home: Path) -> None:
    await history_with(home, "x")
    path = home / "openvaala.duckdb"
    hold = f"import duckdb, sys; c = duckdb.connect({str(path)!r}); print('held', flush=True); sys.stdin.read()"
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", hold, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and await holder.stdout.readline() == b"held\n"
        code, out, err = await openvaala_sql(home, "SELECT 1")
        assert code == 1 and out == ""
        assert "the openvaala runtime host could not run the query" in err and f"process {holder.pid}" in err
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder lets go at EOF
        await asyncio.wait_for(holder.wait(), WAIT)


async def test_a_query_past_its_time_or_size_says_what_to_change(home: Path) -> None:
    never_ends = "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"
    code, out, err = await openvaala_sql(home, never_ends, "--timeout", "0.3")
    assert (code, out) == (1, "")
    assert "time limit of 0.3 s" in err and "--timeout SECONDS (at most 600)" in err
    code, out, err = await openvaala_sql(home, "SELECT repeat('x', 20000000) AS big", "--format", "csv")
    assert code == 0 and "…[cut: the first " in out and len(out) < 17 * 2**20
    assert "values too long for one answer were cut" in err
    code, _, err = await openvaala_sql(home, "SELECT 1", "--timeout", "0")
    assert code == 2 and "--timeout: must be more than 0" in err


def test_sql_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`openvaala sql ... | head`: the reader stops early; no traceback, exit 0."""
    env = {**os.environ, "OPENVAALA_HOME": str(tmp_path), "OPENVAALA_HOST_IDLE_SECONDS": "1"}

    async def make_history() -> None:
        await (await DuckDBStorage.open(str(tmp_path / "openvaala.duckdb"))).close()

    asyncio.run(make_history())
    command = f"{sys.executable} -m openvaala_lsp.cli.main sql 'SELECT * FROM range(100000)' | head -2"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert len(done.stdout.splitlines()) == 2


async def test_a_file_an_older_openvaala_wrote_is_upgraded_for_the_reports(home: Path) -> None:
    """No host runs and the file is at schema 4 (before the analytic views): the host `openvaala sql`
    starts brings it to the current schema, then answers from the views."""
    from openvaala_lsp.storage.migrations import LATEST_VERSION, MIGRATIONS

    path = home / "openvaala.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)")
    for version, sql in MIGRATIONS[:4]:
        con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    con.close()
    code, out, err = await openvaala_sql(home, "SELECT count(*) AS calls FROM model_calls_v", "--format", "csv")
    assert (code, err, out) == (0, "", "calls\n0\n")
    await host_gone(home)
    with duckdb.connect(str(path), read_only=True) as upgraded:
        assert upgraded.execute("SELECT max(version) FROM schema_version").fetchone() == (LATEST_VERSION,)
