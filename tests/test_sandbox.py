"""The shell's sandbox, with the real bubblewrap: what a command may write, read and reach."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import greeting_server

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import SandboxPolicy, ToolContext
from openvaala_lsp.tools.shell import ShellTool

pytestmark = pytest.mark.skipif(not sandbox.state().usable, reason=f"no sandbox here: {sandbox.state().reason}")


async def run(command: str, workspace: Path, policy: SandboxPolicy | None) -> str:
    context = ToolContext(
        directory=str(workspace), roots=[str(workspace)], environment={"PATH": "/usr/bin:/bin"}, sandbox=policy
    )
    output = await asyncio.wait_for(ShellTool().run({"command": command}, context), 60)
    return output.text


@pytest.fixture
def places(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace (under /tmp, brought back into the sandbox's private /tmp) and a folder outside it,
    away from /tmp so the sandbox sees it."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-test-"))
    yield workspace, outside
    shutil.rmtree(outside)


async def test_writes_only_inside_the_workspace(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    policy = SandboxPolicy(writable=(str(workspace),))
    text = await run(f"echo in > inside.txt && echo out > {outside}/escaped.txt", workspace, policy)
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert not (outside / "escaped.txt").exists() and "Read-only file system" in text
    home = Path.home() / f"openvaala-sandbox-{id(policy)}"
    await run(f"touch {home}", workspace, policy)
    assert not home.exists()


async def test_read_only_mode_writes_nothing_but_its_private_tmp(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    policy = SandboxPolicy(writable=(), visible=(str(workspace),))
    text = await run("touch here.txt; echo x > /tmp/scratch && cat /tmp/scratch", workspace, policy)
    assert not (workspace / "here.txt").exists() and "Read-only file system" in text and "x\n" in text
    assert not Path("/tmp/scratch").exists()  # its /tmp was its own


async def test_reads_what_the_user_can_read(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    (outside / "notes.txt").write_text("readable\n")
    assert "readable" in await run(f"cat {outside}/notes.txt", workspace, SandboxPolicy(writable=(str(workspace),)))


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets whoever connects."""
    with greeting_server(b"hello from the host\n") as port:
        yield port


async def test_network_only_when_allowed(places: tuple[Path, Path], loopback_server: int) -> None:
    workspace, _ = places
    fetch = (
        f"python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {loopback_server}), 5).recv(100))\""
    )
    blocked = await run(fetch, workspace, SandboxPolicy(writable=(str(workspace),)))
    assert "hello from the host" not in blocked and ("Network is unreachable" in blocked or "refused" in blocked)
    allowed = await run(fetch, workspace, SandboxPolicy(writable=(str(workspace),), network=True))
    assert "hello from the host" in allowed
