"""Finding 10: a long `openvaala sql` while no runtime host ran read the database file itself and held
`host.lock` meanwhile, so the next editor's start waited for it and failed after 60 s ("holds the
lock but does not answer").

`openvaala sql` never opens the file now: like an editor's front, it starts the host when none runs,
and the host serves the query on a thread of its own. An editor that starts meanwhile finds that
host and is answered at once; the query ends when its command is interrupted."""

from __future__ import annotations

import asyncio
import datetime as dt
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

from lsp_client import LspClient

from openvaala_lsp.model import Conversation, Session
from openvaala_lsp.rundir import run_dir
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

NEVER_ENDS = "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"  # 10^18 rows: a hang guard only
GUARD = 20.0  # an editor's start with a host running takes well under a second


async def history(home: Path) -> None:
    """A database as a runtime leaves it, one conversation in it; nothing holds it afterwards."""
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    at = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
    await storage.create_conversation(
        Conversation(id="conv_1", title="before the query", created_at=at, updated_at=at),
        Session(id="sess_1", conversation_id="conv_1", created_at=at),
    )
    await storage.close()


def lock_held(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # drops a lock we got
    return False


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_an_editor_starts_while_openvaala_sql_runs_a_long_query(home: Path, workspace: Path) -> None:
    await history(home)
    run = run_dir({"OPENVAALA_HOME": str(home)})
    env = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1"}
    query = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "openvaala_lsp.cli.main", "sql", NEVER_ENDS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    editor: LspClient | None = None
    try:
        async with asyncio.timeout(GUARD):  # the query is on its way: a host holds the lock (it held it before)
            while not lock_held(run.host_lock):
                assert query.returncode is None
                await asyncio.sleep(0.02)
        editor = await LspClient.spawn(home, cwd=workspace)
        await editor.initialize([workspace])  # waited 60 s for the query, then failed
        listed = await editor.call("listConversations", timeout=GUARD)
        assert [entry["conversation"]["title"] for entry in listed["items"]] == ["before the query"]
        assert query.returncode is None  # all this while the query ran
        [host] = [int(Path(run.pid_file).read_text())]

        query.send_signal(signal.SIGINT)  # Ctrl-C: its connection closes, and the host stops the query
        out, err = await asyncio.wait_for(query.communicate(), GUARD)
        assert query.returncode == 130 and out == b"" and b"Traceback" not in err, err

        await asyncio.sleep(0.5)  # the interrupt reaches DuckDB at its next vector
        used, since = cpu_seconds(host), time.monotonic()
        assert await editor.call("isIdle", timeout=GUARD) == {"idle": True}
        await asyncio.sleep(1.0)
        # CPU time, not latency: a query still running would burn the whole interval
        assert cpu_seconds(host) - used < (time.monotonic() - since) / 2
    finally:
        if query.returncode is None:
            query.kill()
            await query.wait()
        if editor is not None:
            await editor.shutdown()
