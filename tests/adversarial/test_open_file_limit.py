"""Finding 12: the runtime host spun at its open-file limit. Under `ulimit -n 1024` and ~1000
connections, asyncio's accept loop, out of file descriptors, went on trying and scheduled a retry per
try (CPython gh-151615), each logging a traceback: the retries multiplied, to 580 CPU-seconds and a
3.4 GB `host.log` in ten minutes. New editors timed out, and those connected got `internal` errors:
the host could not even import the module of a request's params.

The host now accepts connections itself, up to its open-file limit less what its own work needs;
more wait in the socket's backlog until one closes. A failed accept pauses accepting (0.1 s, doubling
to 2 s), and the log lets five lines of a kind through a minute, then says how many it dropped."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LspClient

from openvaala_lsp.host import server
from openvaala_lsp.rundir import RunDir, ensure_private, run_dir
from openvaala_lsp.wire.hello import front_hello

LIMIT = 256  # the host's open-file limit: it takes 128 connections, keeping 128 files for itself
TAKEN = max(LIMIT - server.OWN_FILES, LIMIT // 2)  # connections the host takes at once (`server.max_clients`)
FLOOD = 400  # connections, each saying hello and `initialize` as an editor would
GUARD = 20.0
FULL = 200  # connects in a row that found the backlog full: the host takes no more


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.fixture
def files_for_the_flood() -> Iterator[None]:
    """This process holds the flood's sockets: its own limit must let it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FLOOD + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the open-file limit ({hard}) cannot hold {FLOOD} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def start_host(home: Path) -> subprocess.Popen[bytes]:
    """A runtime host with an open-file limit of LIMIT, as `ulimit -n` would give it."""
    ready_r, ready_w = os.pipe()

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))

    env = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "60"}
    host = subprocess.Popen(
        [sys.executable, "-m", "openvaala_lsp.host", "--ready-fd", str(ready_w)],
        env=env,
        cwd=str(home),
        pass_fds=(ready_w,),
        preexec_fn=limited,
    )
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"R"
    finally:
        os.close(ready_r)
    return host


async def flood(run: RunDir, count: int) -> list[socket.socket]:
    """`count` editors' worth of connections, or as many as the host takes and its backlog holds
    (given up once no connect went through for FULL tries): each says hello and sends `initialize`,
    then stays."""
    hello = front_hello()
    greeting = json.dumps({**hello, "env": {"HOME": hello["env"].get("HOME", "/")}}).encode() + b"\n"
    initialize = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    opened: list[socket.socket] = []
    full = 0
    while len(opened) < count and full < FULL:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(run.socket)
        except BlockingIOError:  # the backlog is full: the host may take more in a moment
            sock.close()
            full += 1
            await asyncio.sleep(0.005)
            continue
        sock.send(greeting + initialize)
        opened.append(sock)
        full = 0
    return opened


async def test_a_host_flooded_at_its_open_file_limit_stays_calm_and_serves_again(
    home: Path, workspace: Path, files_for_the_flood: None
) -> None:
    run = run_dir({"OPENVAALA_HOME": str(home)})
    ensure_private(run)
    host = start_host(home)
    log = home / "logs" / "host.log"
    editor = await LspClient.spawn(home, cwd=workspace)  # connected before the flood
    sockets: list[socket.socket] = []
    try:
        await editor.initialize([workspace])
        sockets = await flood(run, FLOOD)
        assert len(sockets) > TAKEN  # more than the host takes: the rest wait in the backlog
        used, since = cpu_seconds(host.pid), time.monotonic()
        # the editor already connected is served: the host kept files for its own work
        assert (await editor.call("listConversations", timeout=GUARD))["items"] == []
        await asyncio.sleep(3)
        busy = cpu_seconds(host.pid) - used
        assert busy < (time.monotonic() - since) / 4, f"{busy:.2f} CPU seconds"  # CPU time, not latency
        assert log.stat().st_size < 16 << 10, log.read_text()[-3000:]
        assert "as many as the open-file limit leaves room for" in log.read_text()  # the flood reached it
    finally:
        for sock in sockets:
            sock.close()
        await editor.shutdown()
    try:
        newcomer = await LspClient.spawn(home, cwd=workspace)
        try:
            await newcomer.initialize([workspace])
            assert await newcomer.call("isIdle", timeout=GUARD) == {"idle": True}
        finally:
            await newcomer.shutdown()
        assert log.stat().st_size < 16 << 10
    finally:
        host.send_signal(signal.SIGTERM)
        assert host.wait(GUARD) == 0


async def test_an_accept_that_fails_for_want_of_files_pauses_instead_of_spinning(home: Path) -> None:
    """What asyncio did wrong, tried on the host's own loop: the listener stays readable while every
    accept fails with EMFILE. The host tries again after 0.1, 0.2, 0.4 s..., not in a loop; once
    accepts work again, it takes the waiting connection."""
    run = run_dir({"OPENVAALA_HOME": str(home)})
    ensure_private(run)
    host = server.Host(run, idle_seconds=60, drain_seconds=1)
    host._listen()
    assert host.listener is not None
    waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    waiting.connect(run.socket)  # the listener is readable from now on
    real = host.listener
    tries: list[float] = []

    class OutOfFiles:
        fail = True

        def fileno(self) -> int:
            return real.fileno()

        def accept(self) -> tuple[socket.socket, Any]:
            tries.append(time.monotonic())
            if self.fail:
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
            return real.accept()

        def close(self) -> None:
            real.close()

    listener = OutOfFiles()
    host.listener = listener  # type: ignore[assignment]
    try:
        await asyncio.sleep(1.2)
        assert 2 <= len(tries) <= 5, tries  # at 0, 0.1, 0.3 and 0.7 s; a spin makes thousands
        assert host.accept_pause > 2 * server.ACCEPT_PAUSE  # doubled at each failure
        listener.fail = False
        async with asyncio.timeout(GUARD):
            while host.clients == 0:  # taken within the next pause
                await asyncio.sleep(0.05)
        assert host.accept_pause == server.ACCEPT_PAUSE  # back to the shortest pause
    finally:
        waiting.close()
        host._stop_listening()
        tasks = list(host.client_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
