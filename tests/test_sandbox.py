"""The shell's sandbox, with the real bubblewrap: what a command may write, read and reach, in a
sandbox of its own and in a warm one (`warm_sandbox.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from loopback import greeting_server

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import SandboxPolicy, ToolContext
from openvaala_lsp.tools.process import run_process_group
from openvaala_lsp.tools.shell import ShellTool
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

pytestmark = pytest.mark.skipif(not sandbox.state().usable, reason=f"no sandbox here: {sandbox.state().reason}")


async def run(command: str, workspace: Path, policy: SandboxPolicy | None, warm: WarmSandboxes | None = None) -> str:
    context = ToolContext(
        directory=str(workspace),
        roots=[str(workspace)],
        environment={"PATH": "/usr/bin:/bin"},
        sandbox=policy,
        warm=warm,
    )
    if warm is not None and policy is not None:
        await warm_up(context)
    output = await asyncio.wait_for(ShellTool().run({"command": command}, context), 60)
    return output.text


async def warm_up(context: ToolContext) -> None:
    """Until a command runs in a warm sandbox: its shell is no longer the sandbox's first process
    (the spawner is)."""
    seen = []
    for _ in range(200):
        output = await ShellTool().run({"command": "echo $PPID"}, context)
        seen.append(output.text)
        parent, _, status = output.text.partition("\n")
        assert status == "[exit code 0]", seen
        if parent != "1":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no warm sandbox started: {seen}")


@pytest.fixture
def places(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace (under /tmp, brought back into the sandbox's private /tmp) and a folder outside it,
    away from /tmp so the sandbox sees it."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-test-"))
    yield workspace, outside
    shutil.rmtree(outside)


async def test_writes_only_inside_the_workspace(places: tuple[Path, Path], warm: WarmSandboxes | None) -> None:
    workspace, outside = places
    policy = SandboxPolicy(writable=(str(workspace),))
    text = await run(f"echo in > inside.txt && echo out > {outside}/escaped.txt", workspace, policy, warm)
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert not (outside / "escaped.txt").exists() and "Read-only file system" in text
    home = Path.home() / f"openvaala-sandbox-{id(policy)}"
    await run(f"touch {home}", workspace, policy, warm)
    assert not home.exists()


async def test_read_only_mode_writes_nothing_but_its_private_tmp(
    places: tuple[Path, Path], warm: WarmSandboxes | None
) -> None:
    workspace, _ = places
    policy = SandboxPolicy(writable=(), visible=(str(workspace),))
    text = await run("touch here.txt; echo x > /tmp/scratch && cat /tmp/scratch", workspace, policy, warm)
    assert not (workspace / "here.txt").exists() and "Read-only file system" in text and "x\n" in text
    assert not Path("/tmp/scratch").exists()  # its /tmp was its own


async def test_reads_what_the_user_can_read(places: tuple[Path, Path], warm: WarmSandboxes | None) -> None:
    workspace, outside = places
    (outside / "notes.txt").write_text("readable\n")
    policy = SandboxPolicy(writable=(str(workspace),))
    assert "readable" in await run(f"cat {outside}/notes.txt", workspace, policy, warm)


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets whoever connects."""
    with greeting_server(b"hello from the host\n") as port:
        yield port


async def test_network_only_when_allowed(
    places: tuple[Path, Path], loopback_server: int, warm: WarmSandboxes | None
) -> None:
    workspace, _ = places
    fetch = (
        f"python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {loopback_server}), 5).recv(100))\""
    )
    blocked = await run(fetch, workspace, SandboxPolicy(writable=(str(workspace),)), warm)
    assert "hello from the host" not in blocked and ("Network is unreachable" in blocked or "refused" in blocked)
    allowed = await run(fetch, workspace, SandboxPolicy(writable=(str(workspace),), network=True), warm)
    assert "hello from the host" in allowed


@pytest.fixture
async def sandboxes() -> AsyncIterator[WarmSandboxes]:
    sandboxes = WarmSandboxes()
    yield sandboxes
    await sandboxes.close()


@pytest.fixture
async def context(places: tuple[Path, Path], sandboxes: WarmSandboxes) -> ToolContext:
    """A workspace's shell whose commands run in a warm sandbox from now on."""
    ready = warm_context(places[0], sandboxes)
    await warm_up(ready)
    return ready


def warm_context(workspace: Path, sandboxes: WarmSandboxes) -> ToolContext:
    return ToolContext(
        directory=str(workspace),
        roots=[str(workspace)],
        environment={"PATH": "/usr/bin:/bin"},
        sandbox=SandboxPolicy(writable=(str(workspace),)),
        warm=sandboxes,
    )


async def shell(context: ToolContext, command: str, **arguments: object) -> str:
    output = await asyncio.wait_for(ShellTool().run({"command": command, **arguments}, context), 60)
    return output.text


async def test_a_warm_sandbox_leaves_the_next_command_nothing(context: ToolContext) -> None:
    workspace = Path(context.directory)
    left = (
        "echo kept > kept.txt; echo x > /tmp/scratch; mkdir -p /tmp/d/e; echo y > /dev/shm/s; echo z > /dev/made;"
        " sleep 300 >/dev/null 2>&1 & setsid sleep 301 >/dev/null 2>&1 & echo started"
    )
    assert "started" in await shell(context, left)
    after = await shell(context, "echo $PPID; ls -A /tmp /dev/shm; ls /dev | grep -c made; pgrep -c sleep")
    spawner, rest = after.split("\n", 1)
    assert spawner != "1"  # the warm sandbox again
    # its /tmp holds only the way to the workspace (bound there, under the machine's /tmp); no file
    # in /dev/shm or /dev, no process left
    assert workspace.parts[1] == "tmp"
    assert rest == f"/dev/shm:\n\n/tmp:\n{workspace.parts[2]}\n0\n0\n[exit code 1]"
    assert (workspace / "kept.txt").read_text() == "kept\n"


async def test_exit_codes_signals_and_timeouts_in_a_warm_sandbox(context: ToolContext) -> None:
    assert (await shell(context, "echo out; echo err >&2; exit 3")) == "out\nerr\n[exit code 3]"
    assert (await shell(context, "kill -TERM $$")).endswith("[killed by SIGTERM]")
    timed_out = await shell(context, "sleep 30 & sleep 31", timeout_ms=300)
    assert timed_out.startswith("(no output)\n[timed out after 300 ms")
    again = await shell(context, "echo $PPID; pgrep -c sleep")
    assert not again.startswith("1\n") and again.endswith("0\n[exit code 1]")


async def test_an_interrupted_command_ends_with_its_warm_sandbox(context: ToolContext) -> None:
    marker = f"sleep 987.{os.getpid()}"  # a command line of its own, to look for
    running = asyncio.ensure_future(shell(context, marker))
    for _ in range(100):
        await asyncio.sleep(0.02)
        if marker in "\n".join(_host_processes()):
            break
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert marker not in "\n".join(_host_processes())
    assert "ok" in await shell(context, "echo ok")


async def test_a_command_that_kills_the_spawner_ends_killed(context: ToolContext) -> None:
    # at once: the spawner may die before it says the command runs, which must not start it again
    killed = await shell(context, "kill -KILL $PPID; sleep 5")
    assert killed.endswith("[killed by SIGKILL]"), killed
    assert (await shell(context, "echo ok")) == "ok\n[exit code 0]"  # a sandbox of its own meanwhile
    await warm_up(context)  # and a warm one again


async def test_a_command_that_cannot_start_leaves_the_warm_sandbox_usable(
    context: ToolContext, sandboxes: WarmSandboxes
) -> None:
    workspace = Path(context.directory)
    assert context.sandbox is not None
    read_fd, write_fd = os.pipe()
    try:
        with pytest.raises(FileNotFoundError):
            async with sandboxes.launch(
                context.sandbox, ["/no/such/program"], cwd=str(workspace), env={}, output=write_fd
            ):
                pass
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert not (await shell(context, "echo $PPID")).startswith("1\n")


async def test_a_warm_sandbox_finds_a_program_in_the_command_s_own_path(
    context: ToolContext, sandboxes: WarmSandboxes
) -> None:
    """The spawner looks a program up as execvpe would: in the PATH the command gets, not its own."""
    workspace = Path(context.directory)
    assert context.sandbox is not None
    tools = workspace / "tools"
    tools.mkdir()
    (tools / "greet").write_text('#!/bin/sh\necho "hello from $0, parent $PPID"\nexit 4\n')
    (tools / "greet").chmod(0o755)
    launch = functools.partial(sandboxes.launch, context.sandbox)
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    ran = await run_process_group(
        ["greet"], cwd=str(workspace), env=env, time_limit=30, read_limit=1 << 16, launch=launch
    )
    said = ran.output.render()
    assert said.startswith(f"hello from {tools}/greet, parent ") and ran.exit_code == 4
    assert not said.rstrip().endswith("parent 1")  # the warm sandbox's spawner started it
    with pytest.raises(FileNotFoundError):
        await run_process_group(
            ["greet"],
            cwd=str(workspace),
            env={"PATH": "/usr/bin:/bin"},
            time_limit=30,
            read_limit=1 << 16,
            launch=launch,
        )
    assert not (await shell(context, "echo $PPID")).startswith("1\n")  # still usable


async def test_a_warm_sandbox_that_died_idle_leaves_the_next_command_a_sandbox_of_its_own(
    context: ToolContext,
) -> None:
    python = os.path.realpath(sys.executable)
    [spawner] = [pid for pid, line in _host_processes(pids=True) if line.startswith(python) and "tmpfs" in line]
    os.kill(int(spawner), signal.SIGKILL)
    assert (await shell(context, "echo $PPID")).startswith("1\n")  # not an error, nor run twice
    await warm_up(context)


async def test_closing_ends_every_warm_sandbox(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    sandboxes = WarmSandboxes()
    context = warm_context(workspace, sandboxes)
    await warm_up(context)
    spawners = await shell(context, "echo $PPID")
    assert spawners and _spawners()
    await sandboxes.close()
    assert not _spawners()
    assert (await shell(context, "echo $PPID")).startswith("1\n")  # closed: each command its own sandbox


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not within 10 s")


def _host_processes(*, pids: bool = False) -> list[Any]:
    """The command lines of this process's descendants (with their pids), as this machine's /proc
    shows them."""
    parents: dict[str, str] = {}
    lines: dict[str, str] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            parents[pid] = status.split("PPid:", 1)[1].split()[0]
            lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")

    def ours(pid: str) -> bool:
        while pid in parents and pid != "0":
            pid = parents[pid]
            if pid == str(os.getpid()):
                return True
        return False

    return [(pid, line) if pids else line for pid, line in lines.items() if ours(pid)]


def _spawners() -> list[str]:
    """The warm sandboxes' spawners this process started (their command line holds the spawner's
    source)."""
    python = os.path.realpath(sys.executable)
    return [line for line in _host_processes() if line.startswith(python) and "sandbox's own tmpfs" in line]


async def test_idle_warm_sandboxes_end_and_make_room_for_another_kind(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    sandboxes = WarmSandboxes(limit=1, idle_seconds=0.5)
    try:
        offline = warm_context(workspace, sandboxes)
        online = attrs.evolve(offline, sandbox=SandboxPolicy(writable=(str(workspace),), network=True))
        await warm_up(offline)
        await warm_up(online)  # the offline one, idle, made room for it
        await until(lambda: len(_spawners()) == 1)
        assert (await shell(offline, "echo $PPID")).startswith("1\n")  # its own sandbox again
        await until(lambda: not _spawners())  # idle past idle_seconds: ended
    finally:
        await sandboxes.close()


async def test_commands_back_to_back_share_one_warm_sandbox(context: ToolContext) -> None:
    """Each waits for the clean after the one before (done while the caller went on)."""
    parents = [await shell(context, "echo $PPID") for _ in range(5)]
    assert len(set(parents)) == 1 and not parents[0].startswith("1\n")
    assert len(_spawners()) == 1
