"""The runtime host with real processes: editors spawn `python -m openvaala_lsp` (the thin front),
fronts start and share one host per OPENVAALA_HOME, hosts get killed, drained and refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient, ResponseError
from processes import alive
from turn_helpers import API_KEY, Session, definitions

from openvaala_lsp import __version__
from openvaala_lsp.rundir import RunDir, ensure_private, run_dir

FRONT_ENV = {
    "OPENVAALA_HOST_IDLE_SECONDS": "1",
    "OPENVAALA_STANDALONE": "",
    "OPENVAALA_VERSION_OVERRIDE": "",
}
WAIT = 20.0


def rundir(home: Path) -> RunDir:
    return run_dir({"OPENVAALA_HOME": str(home)})


def host_pids(home: Path) -> list[int]:
    """Live host processes serving `home`, by the name a host gives itself (a zombie keeps the name,
    but its environ reads empty)."""
    mark = f"OPENVAALA_HOME={home}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/comm").read_bytes().strip() != b"openvaala-host":
                continue
            if mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def host_log(home: Path) -> str:
    path = home / "logs" / "host.log"
    return path.read_text() if path.exists() else ""


def started_hosts(home: Path) -> int:
    return host_log(home).count(" started (pid ")


async def until(predicate: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            while not predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"timed out waiting until {what}")


async def reconnected(editor: LspClient, restarts: int) -> None:
    """The front has noticed `restarts` host deaths; what the editor sends now reaches the next host."""
    await until(lambda: len(editor.of("window/logMessage")) >= restarts, f"the front saw {restarts} host deaths")


async def spawn(
    home: Path, cwd: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = (), stderr: bool = False
) -> LspClient:
    """Like LspClient.spawn, but forces front mode and can capture stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "openvaala_lsp",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if stderr else None,
        cwd=str(cwd),
        env={**os.environ, "OPENVAALA_HOME": str(home), **FRONT_ENV, **(env or {})},
    )
    return LspClient(process)


async def stderr_of(client: LspClient) -> str:
    assert client.process.stderr is not None
    return (await client.process.stderr.read()).decode()


@pytest.fixture
async def homes(home: Path) -> AsyncIterator[list[Path]]:
    """Every OPENVAALA_HOME a test uses; hosts still serving them are killed at teardown."""
    used = [home]
    yield used
    for path in used:
        for pid in host_pids(path):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def ws(workspace: Path) -> Path:
    return workspace


async def test_two_editors_share_one_runtime(homes: list[Path], ws: Path, tmp_path: Path) -> None:
    home = homes[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    a = await spawn(home, ws, env={"OPENVAALA_TEST_MARK": "editor-a"})
    b = await spawn(home, elsewhere, env={"OPENVAALA_TEST_MARK": "editor-b"})
    try:
        await a.initialize([ws])
        await b.initialize()  # no folders, no root: B's cwd (from its hello) is its workspace
        assert len(host_pids(home)) == 1
        from_a = await a.call("createConversation")
        from_b = await b.call("createConversation")
        for editor in (a, b):
            listed = await editor.call("listConversations")
            assert {from_a["id"], from_b["id"]} <= {e["conversation"]["id"] for e in listed["items"]}

        subscribed = await a.call("subscribeConversation", {"conversationId": from_b["id"]})
        await b.call("setConversationTitle", {"conversationId": from_b["id"], "title": "named in B"})
        event = await a.wait_for(
            lambda m: (
                m["method"] == "openvaala/conversationEvent"
                and m["params"]["subscriptionId"] == subscribed["subscriptionId"]
            )
        )
        assert event["params"]["event"] == {"type": "titleChanged", "title": "named in B"}

        # each connection keeps the environment and cwd its own front sent, not the host's
        term_a = await a.call("openTerminalWorkspace", {})
        term_b = await b.call("openTerminalWorkspace", {})
        assert "OPENVAALA_TEST_MARK=editor-a" in term_a["workspace"]["environment"]
        assert "OPENVAALA_TEST_MARK=editor-b" in term_b["workspace"]["environment"]
        assert (term_a["directory"], term_b["directory"]) == (str(ws), str(elsewhere))

        host = host_pids(home)
        assert await a.shutdown() == 0
        await b.call("setConversationTitle", {"conversationId": from_a["id"], "title": "after A left"})
        assert (await b.call("getConversation", {"conversationId": from_a["id"]}))["title"] == "after A left"
        assert host_pids(home) == host
    finally:
        await a.shutdown()
        await b.shutdown()


async def test_host_killed_under_two_editors(homes: list[Path], ws: Path, tmp_path: Path) -> None:
    home = homes[0]
    added = tmp_path / "added"
    added.mkdir()
    asked, release = asyncio.Event(), asyncio.Event()

    async def folders(params: Any) -> list[dict[str, str]]:
        asked.set()
        await release.wait()
        return [{"uri": ws.as_uri(), "name": ws.name}]

    a = await spawn(home, ws)
    b = await spawn(home, ws)
    a.handlers["workspace/workspaceFolders"] = folders
    try:
        # A has no folders of its own: the host asks A's editor, which we hold to keep a request in flight
        await a.initialize(capabilities={"workspace": {"workspaceFolders": True}})
        await b.initialize([ws])
        kept = await b.call("createConversation")
        await b.call("setConversationTitle", {"conversationId": kept["id"], "title": "before the kill"})
        guarded = {"name": "guarded", "permissions": {"default": "ask"}, "sandbox": {"mode": "read-only"}}
        await b.call("setDefinitions", {"agents": [guarded]})
        sub_a = (await a.call("subscribeConversation", {"conversationId": kept["id"]}))["subscriptionId"]
        sub_b = (await b.call("subscribeConversation", {"conversationId": kept["id"]}))["subscriptionId"]
        folder_event = {"event": {"added": [{"uri": added.as_uri(), "name": "added"}], "removed": []}}
        await b.notify("workspace/didChangeWorkspaceFolders", folder_event)
        in_flight = asyncio.ensure_future(a.call("createConversation"))
        await asyncio.wait_for(asked.wait(), WAIT)

        [old_host] = host_pids(home)
        os.kill(old_host, signal.SIGKILL)
        release.set()
        with pytest.raises(ResponseError) as err:
            await in_flight
        assert (err.value.code, err.value.kind) == (-32014, "runtimeStopped")
        for editor, sub_id in ((a, sub_a), (b, sub_b)):
            closed = await editor.wait_for(
                lambda m, s=sub_id: m["method"] == "openvaala/subscriptionClosed" and m["params"]["subscriptionId"] == s
            )
            assert closed["params"]["reason"]["kind"] == "runtimeStopped"

        # the fronts replayed their sessions into one new host: no editor re-initializes
        again = await b.call("getConversation", {"conversationId": kept["id"]})
        assert again["title"] == "before the kill"
        assert kept["id"] in {e["conversation"]["id"] for e in (await a.call("listConversations"))["items"]}
        # and the definitions B had set: a new host would otherwise start from the config files
        assert [(x["name"], x.get("permissions")) for x in (await b.call("listAgents"))["agents"]] == [
            ("guarded", {"default": "ask"})
        ]
        directories = await b.call("getWorkspaceDirectories", {})
        assert {f["path"] for f in directories["workspaceFolders"]} == {str(ws), str(added)}
        assert (await a.call("createConversation"))["id"].startswith("conv_")
        [new_host] = host_pids(home)
        assert new_host != old_host
        assert started_hosts(home) == 2
        assert "another host holds" not in host_log(home)
    finally:
        release.set()
        await a.shutdown()
        await b.shutdown()


async def test_fronts_starting_together_start_one_host(homes: list[Path], ws: Path, tmp_path: Path) -> None:
    for round_ in range(2):
        home = tmp_path / f"together-{round_}"
        home.mkdir()
        homes.append(home)
        editors = await asyncio.gather(*(spawn(home, ws) for _ in range(3)))
        try:
            await asyncio.gather(*(editor.initialize([ws]) for editor in editors))
            created = await editors[0].call("createConversation")
            listed = await editors[-1].call("listConversations")
            assert [e["conversation"]["id"] for e in listed["items"]] == [created["id"]]
            assert len(host_pids(home)) == 1
            assert started_hosts(home) == 1
            assert "another host holds" not in host_log(home)
        finally:
            for editor in editors:
                await editor.shutdown()


@pytest.mark.parametrize("damage", ["other-owner", "world-writable"])
async def test_front_refuses_an_unsafe_run_dir(homes: list[Path], ws: Path, damage: str) -> None:
    run = rundir(homes[0])
    ensure_private(run)
    if damage == "other-owner":
        os.chown(run.path, 65534, 65534)
        expected = "owned by uid 65534"
    else:
        os.chmod(run.path, 0o777)
        expected = "mode 0o777"
    editor = await spawn(homes[0], ws, stderr=True)
    assert await asyncio.wait_for(editor.process.wait(), WAIT) == 1
    message = await stderr_of(editor)
    assert expected in message and run.path in message and "Traceback" not in message
    assert host_pids(homes[0]) == []
    await editor.close()


async def test_front_refuses_a_socket_served_by_another_uid(homes: list[Path], ws: Path) -> None:
    run = rundir(homes[0])
    ensure_private(run)
    impostor = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.bind(sys.argv[1])\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s.listen()\n"  # SO_PEERCRED reports the credentials of listen()
        "print('ready', flush=True)\n"
        "c, _ = s.accept(); c.recv(1)\n",
        run.socket,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert impostor.stdout is not None
        assert await asyncio.wait_for(impostor.stdout.readline(), WAIT) == b"ready\n"
        editor = await spawn(homes[0], ws, stderr=True)
        assert await asyncio.wait_for(editor.process.wait(), WAIT) == 1
        message = await stderr_of(editor)
        assert f"served by uid 65534 (pid {impostor.pid})" in message and "Traceback" not in message
        await editor.close()
    finally:
        if impostor.returncode is None:
            impostor.kill()
        await impostor.wait()


async def test_host_refuses_a_front_of_another_uid(homes: list[Path], ws: Path) -> None:
    # pytest's base temp directory is 0700: uid 65534 could not even reach the socket from there
    outer = Path(tempfile.mkdtemp(prefix="openvaala-test-"))
    outer.chmod(0o711)
    home = outer / "home"
    home.mkdir()
    homes.append(home)
    run = rundir(home)
    editor = await spawn(home, ws)
    try:
        await editor.initialize([ws])
        # open the guards the directory and socket modes provide, to reach the SO_PEERCRED check
        os.chmod(home, 0o711)
        os.chmod(run.path, 0o711)
        os.chmod(run.socket, 0o666)
        try:
            intruder = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "import os, socket, sys\n"
                "os.setgid(65534); os.setuid(65534)\n"
                "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                "s.sendall(b'{}\\n')\n"
                "print(repr(s.recv(100)))\n",
                run.socket,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await asyncio.wait_for(intruder.communicate(), WAIT)
        finally:
            os.chmod(home, 0o700)
            os.chmod(run.path, 0o700)
            os.chmod(run.socket, 0o600)
        assert out.strip() in (b"b''", b"")  # closed without a word (or reset)
        assert "refused a connection from uid 65534" in host_log(home)
        assert await editor.call("isIdle") == {"idle": True}
    finally:
        await editor.shutdown()
        for pid in host_pids(home):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(outer, ignore_errors=True)


async def test_host_listens_again_when_its_socket_is_removed(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    run = rundir(home)
    first = await spawn(home, ws, env={"OPENVAALA_HOST_IDLE_SECONDS": "600"})
    try:
        await first.initialize([ws])
        [host] = host_pids(home)
        os.unlink(run.socket)
        second = await spawn(home, ws)  # waits on spawn.lock while host.lock is held, then finds the socket
        await second.initialize([ws])
        assert await second.call("isIdle") == {"idle": True}
        assert host_pids(home) == [host] and started_hosts(home) == 1
        assert await second.shutdown() == 0
    finally:
        await first.shutdown()
    shutil.rmtree(run.path)  # its OPENVAALA_HOME is being deleted: stop rather than recreate it
    await until(lambda: not alive(host), "the host whose run directory is gone exits")
    assert not os.path.exists(run.path)


def open_files(pid: int) -> set[str]:
    """What the fds of `pid` point at (pipes and sockets by inode)."""
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own fd is gone by now
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


async def test_the_host_a_front_starts_keeps_none_of_its_files(homes: list[Path], ws: Path) -> None:
    """The editor's pipes and terminal, spawn.lock and the ready pipe must all be closed in the host
    a front starts, or an editor would wait for an EOF that never comes and the next front for a lock
    nobody holds."""
    home = homes[0]
    editor = await spawn(home, ws)
    try:
        await editor.initialize([ws])
        [host] = host_pids(home)
        assert Path(f"/proc/{host}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"openvaala_lsp.host"]
        front = open_files(editor.process.pid)
        held = open_files(host)
        assert held.isdisjoint(front), sorted(held & front)
        assert not any(name.endswith("/spawn.lock") or name.startswith("pipe:") for name in held), sorted(held)
        assert os.readlink(f"/proc/{host}/cwd") == "/"
        assert os.getsid(host) != os.getsid(editor.process.pid)  # its own session: the editor's signals stay away
        assert str(home / "logs" / "host.log") in held
    finally:
        assert await editor.shutdown() == 0
    assert host_pids(home) == [host]  # outlives the front


async def test_front_imports_only_the_standard_library(homes: list[Path], ws: Path, tmp_path: Path) -> None:
    listing = tmp_path / "modules.txt"
    editor = await spawn(homes[0], ws, env={"OPENVAALA_FRONT_MODULES_FILE": str(listing)})
    try:
        await editor.initialize([ws])  # a cold start: the spawn path is included
        await editor.call("createConversation")
    finally:
        assert await editor.shutdown() == 0
    loaded = set(listing.read_text().split())
    bare = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; print(*sys.modules)", stdout=asyncio.subprocess.PIPE
    )
    startup = set((await bare.communicate())[0].decode().split())  # what site loads before any code
    ours = {m for m in loaded - startup if m.split(".")[0] == "openvaala_lsp"}
    foreign = {m for m in loaded - startup - ours if m.split(".")[0] not in sys.stdlib_module_names}
    assert foreign == set()
    assert {"pygls", "duckdb", "httpx", "lsprotocol", "cattrs", "attrs"}.isdisjoint(loaded)
    assert ours <= {
        "openvaala_lsp",
        "openvaala_lsp.cli",
        "openvaala_lsp.cli.lsp",
        "openvaala_lsp.paths",
        "openvaala_lsp.front",
        "openvaala_lsp.front.main",
        "openvaala_lsp.front.connect",
        "openvaala_lsp.front.relay",
        "openvaala_lsp.rundir",
        "openvaala_lsp.front.session",
        "openvaala_lsp.wire",  # imports nothing
        "openvaala_lsp.wire.hello",
        "openvaala_lsp.wire.framing",  # stdlib only, shared with the server
    }


async def test_idle_host_exits_and_checkpoints(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    run = rundir(home)
    editor = await spawn(home, ws)
    try:
        await editor.initialize([ws])
        created = await editor.call("createConversation")
        await editor.call("setConversationTitle", {"conversationId": created["id"], "title": "kept"})
        [host] = host_pids(home)
        await asyncio.sleep(2.5)  # well past the 1 s grace: a connected editor keeps the host
        assert await editor.call("isIdle") == {"idle": True}
        assert host_pids(home) == [host]
        # the collector, off through the start, came back once the host was quiet
        assert host_log(home).count("objects collected, the rest frozen") == 1
    finally:
        assert await editor.shutdown() == 0
    await until(lambda: not alive(host), "the idle host exits")
    assert "stopping: no editor for 1 s" in host_log(home)
    assert not (home / "openvaala.duckdb.wal").exists()
    assert (home / "openvaala.duckdb").exists()
    assert not os.path.exists(run.socket) and not os.path.exists(run.pid_file)

    standalone = await spawn(home, ws, args=("--standalone",))
    try:
        await standalone.initialize([ws])
        assert (await standalone.call("getConversation", {"conversationId": created["id"]}))["title"] == "kept"
    finally:
        await standalone.shutdown()


async def test_sigterm_stops_the_host_cleanly(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    run = rundir(home)
    editor = await spawn(home, ws, env={"OPENVAALA_HOST_IDLE_SECONDS": "600"})
    try:
        await editor.initialize([ws])
        await editor.call("createConversation")
    finally:
        assert await editor.shutdown() == 0
    [host] = host_pids(home)
    os.kill(host, signal.SIGTERM)
    await until(lambda: not alive(host), "the host exits on SIGTERM")
    assert "stopping: SIGTERM" in host_log(home) and f"(pid {host}) stopped" in host_log(home)
    assert not (home / "openvaala.duckdb.wal").exists()
    assert not os.path.exists(run.socket) and not os.path.exists(run.pid_file)


async def test_an_older_front_is_refused(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    current = await spawn(home, ws)
    try:
        await current.initialize([ws])
        [host] = host_pids(home)
        old = await spawn(home, ws, env={"OPENVAALA_VERSION_OVERRIDE": "0.0.1"}, stderr=True)
        assert await asyncio.wait_for(old.process.wait(), WAIT) == 1
        message = await stderr_of(old)
        assert f"openvaala-lsp 0.0.1 is older than the running openvaala runtime host {__version__}" in message
        await old.close()
        assert await current.call("isIdle") == {"idle": True}
        assert host_pids(home) == [host]
    finally:
        await current.shutdown()


async def test_a_newer_front_replaces_an_older_host(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    current = await spawn(home, ws, stderr=True)
    newer: LspClient | None = None
    try:
        await current.initialize([ws])
        created = await current.call("createConversation")
        [old_host] = host_pids(home)
        newer = await spawn(home, ws, env={"OPENVAALA_VERSION_OVERRIDE": "99.0.0"})
        await newer.initialize([ws])
        assert (await newer.call("getConversation", {"conversationId": created["id"]}))["id"] == created["id"]
        await until(lambda: not alive(old_host), "the drained host has exited")
        [new_host] = host_pids(home)
        assert f"host 99.0.0 started (pid {new_host})" in host_log(home)
        assert "stopping: a newer front arrived" in host_log(home)
        # the older front lost its host; the only host left is newer, which it refuses clearly
        assert await asyncio.wait_for(current.process.wait(), WAIT) == 1
        assert "is older than the running openvaala runtime host 99.0.0" in await stderr_of(current)
    finally:
        await current.close()
        if newer is not None:
            await newer.shutdown()


async def test_standalone_names_the_process_holding_the_database(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    editor = await spawn(home, ws)
    try:
        await editor.initialize([ws])
        await editor.call("isIdle")  # the host has the database open
        [host] = host_pids(home)
        standalone = await spawn(home, ws, args=("--standalone",), stderr=True)
        await standalone.initialize([ws])
        with pytest.raises(ResponseError) as err:
            await standalone.call("listConversations")
        assert err.value.kind == "runtimeStopped"
        assert f"process {host}" in err.value.message
        assert await standalone.shutdown() == 0
        assert "Traceback" not in await stderr_of(standalone)
    finally:
        await editor.shutdown()


async def test_front_gives_up_after_repeated_host_deaths(homes: list[Path], ws: Path) -> None:
    home = homes[0]
    editor = await spawn(home, ws, stderr=True)
    try:
        await editor.initialize([ws])
        for restarts in range(1, 4):
            [host] = host_pids(home)
            os.kill(host, signal.SIGKILL)
            await reconnected(editor, restarts)
            assert await editor.call("isIdle") == {"idle": True}  # answered by the restarted host
        [host] = host_pids(home)
        os.kill(host, signal.SIGKILL)
        assert await asyncio.wait_for(editor.process.wait(), WAIT) == 1
        assert "stopped 4 times within 60 s; giving up" in await stderr_of(editor)
    finally:
        await editor.close()


async def test_a_stalled_editor_is_dropped_and_never_stalls_the_other(
    homes: list[Path], ws: Path, provider: FakeProviderServer
) -> None:
    """Two editors watch one session; one stops reading. Its subscription is closed
    subscriberTooSlow, while the turn and the other editor get everything."""
    home = homes[0]
    deltas, piece = 3000, "x" * 1000  # big deltas fill the stalled editor's pipes quickly
    provider.enqueue("openai-chat", ChatStream().deltas(deltas, piece).finish().response())
    fast = await spawn(home, ws, env={"FAKE_API_KEY": API_KEY})
    slow = await spawn(home, ws, env={"FAKE_API_KEY": API_KEY})
    try:
        await fast.initialize([ws])
        await slow.initialize([ws], options={"maxBufferedEvents": 200})
        await fast.call("setDefinitions", definitions(provider))
        watcher = await Session.open(fast)
        stalled = await Session.open(slow, watcher.id)
        slow.pause_reading()
        await watcher.submit("stream a lot")
        turn = await watcher.turn_completed()
        assert turn["status"] == "completed"
        streamed = "".join(e["delta"] for e in watcher.events() if e["type"] == "itemDelta")
        assert streamed == piece * deltas
        assert not fast.of("openvaala/subscriptionClosed")

        slow.resume_reading()
        closed = await slow.wait_for(
            lambda m: m["method"] == "openvaala/subscriptionClosed" and m["params"]["subscriptionId"] == stalled.sub
        )
        assert closed["params"]["reason"]["kind"] == "subscriberTooSlow"
        received = stalled.events()  # checks that seq has no gap: what arrived is an exact prefix
        assert not any(e["type"] == "turnCompleted" for e in received)
        # the editor catches up by listing and subscribing again
        again = await slow.call("subscribeSession", {"conversationId": stalled.id, "sessionId": stalled.session_id})
        items = await slow.call("listItems", {"conversationId": stalled.id})
        assert again["lastSavedOrdinal"] == items["items"][-1]["ordinal"] == 2
        assert again["streamingItems"] == [] and again["pendingInputs"] == []
    finally:
        await fast.shutdown()
        await slow.shutdown()


async def test_host_killed_mid_turn(homes: list[Path], ws: Path, provider: FakeProviderServer) -> None:
    """kill -9 of the host while a turn streams: the editors recover, what was acknowledged is there,
    the turn reads interrupted, the queued input is still pending."""
    home = homes[0]
    provider.enqueue("openai-chat", ChatStream().text("partial").pause(60).finish().response())
    a = await spawn(home, ws, env={"FAKE_API_KEY": API_KEY})
    b = await spawn(home, ws, env={"FAKE_API_KEY": API_KEY})
    try:
        await a.initialize([ws])
        await b.initialize([ws])
        await a.call("setDefinitions", definitions(provider))
        session = await Session.open(a)
        follower = await Session.open(b, session.id)
        asked = await session.submit("question")
        await follower.wait_event(lambda e: e["type"] == "itemDelta")  # B sees A's turn stream
        queued = await session.submit("follow-up")
        [old_host] = host_pids(home)
        os.kill(old_host, signal.SIGKILL)
        for editor, sub in ((a, session.sub), (b, follower.sub)):
            closed = await editor.wait_for(
                lambda m, s=sub: m["method"] == "openvaala/subscriptionClosed" and m["params"]["subscriptionId"] == s
            )
            assert closed["params"]["reason"]["kind"] == "runtimeStopped"

        turns = await b.call("listTurns", {"conversationId": session.id})
        assert [t["status"] for t in turns["items"]] == ["interrupted"]
        items = await a.call("listItems", {"conversationId": session.id})
        assert items["items"][0]["item"]["id"] == asked
        reopened = await Session.open(a, session.id)
        assert [p["item"]["id"] for p in reopened.snapshot["pendingInputs"]] == [queued]
        [new_host] = host_pids(home)
        assert new_host != old_host
    finally:
        await a.shutdown()
        await b.shutdown()
