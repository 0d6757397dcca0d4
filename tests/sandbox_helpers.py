"""A command run in the shell's sandbox exactly as the runtime runs it for an agent (the real policy
of `permissions.sandbox_policy`, the real protected paths, the environment filter), on a throwaway
machine layout outside /tmp (the sandbox hides the machine's /tmp, so what lies there proves
nothing): a home with credentials, an `OPENVAALA_HOME` with a database and a listening socket, and
a workspace."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pytest

from openvaala_lsp.definitions import Sandbox
from openvaala_lsp.runtime.permissions import sandbox_policy
from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import ToolContext
from openvaala_lsp.tools.environment import tool_environment
from openvaala_lsp.tools.protected import protected_paths
from openvaala_lsp.tools.shell import ShellTool
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

needs_sandbox = pytest.mark.skipif(not sandbox.state().usable, reason=f"no sandbox here: {sandbox.state().reason}")
SECRET_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n"


@attrs.define
class Machine:
    root: Path
    home: Path  # $HOME, with credentials in it
    openvaala_home: Path  # $OPENVAALA_HOME: the database, the run directory with the host's socket
    workspace: Path

    @property
    def host_socket(self) -> Path:
        return self.openvaala_home / "run" / "host.sock"


@contextlib.contextmanager
def listening(path: Path) -> Iterator[socket.socket]:
    """A Unix socket listening at `path` (connections are accepted by the kernel's backlog)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(16)
    try:
        yield server
    finally:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-adversarial-"))
    found = Machine(root, root / "home", root / "openvaala-home", root / "project")
    (found.home / ".ssh").mkdir(parents=True)
    (found.home / ".ssh" / "id_rsa").write_text(SECRET_KEY)
    (found.home / ".aws").mkdir()
    (found.home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = not-a-real-secret\n")
    (found.home / ".netrc").write_text("machine example.com login me password not-a-real-password\n")
    found.openvaala_home.mkdir()
    (found.openvaala_home / "openvaala.duckdb").write_text("the history")
    (found.openvaala_home / "config.toml").write_text("# the user's configuration\n")
    found.workspace.mkdir()
    monkeypatch.setenv("HOME", str(found.home))
    monkeypatch.setenv("OPENVAALA_HOME", str(found.openvaala_home))
    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(variable, raising=False)
    try:
        yield found
    finally:
        shutil.rmtree(root, ignore_errors=True)


def context_for(
    workspace: Path,
    agent_sandbox: Sandbox | None = None,
    *,
    environment: Mapping[str, str] | None = None,
    roots: list[Path] | None = None,
    warm: WarmSandboxes | None = None,
    model_keys: tuple[str, ...] = (),
) -> ToolContext:
    """The ToolContext the runtime gives an agent with `agent_sandbox` in `workspace`."""
    agent_sandbox = agent_sandbox or Sandbox()
    folders = [str(root) for root in roots or [workspace]]
    env = dict(environment if environment is not None else {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]})
    context = ToolContext(
        directory=str(workspace),
        roots=folders,
        environment=tool_environment(env, allow=agent_sandbox.allow_env or (), model_keys=model_keys),
        warm=warm,
        protected=protected_paths(folders, agent_sandbox.deny_read or ()),
    )
    return attrs.evolve(context, sandbox=sandbox_policy(agent_sandbox, context))


async def sandboxed(command: str, context: ToolContext) -> str:
    output = await asyncio.wait_for(ShellTool().run({"command": command}, context), 60)
    return output.text


def in_private_tmp(script: str, *, timeout: float = 120, own_pids: bool = False) -> str:
    """Runs a Python `script` (with this checkout importable) in a mount namespace of its own whose
    /tmp is a throwaway tmpfs: what a test does to /tmp there (or what a broken sandbox's cleaner
    would) cannot reach the machine's. As root, a mount namespace; as another user, a user namespace
    too (root only inside it). `own_pids`: a PID namespace too, the script its first process (what
    kills every other process there reaches no process of the machine). Returns what the script
    printed; fails the test if it failed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("util-linux's unshare is needed to give the test a /tmp of its own")
    namespaces = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        namespaces = ["--user", "--map-root-user", *namespaces]
    if own_pids:
        namespaces += ["--pid", "--fork", "--mount-proc"]
    prologue = (
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.mount(b'tmpfs', b'/tmp', b'tmpfs', 0, b'mode=1777') != 0:\n"
        "    sys.exit(f'no private /tmp: {os.strerror(ctypes.get_errno())}')\n"
    )
    checkout = str(Path(__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([checkout, str(Path(__file__).parent)])}
    done = subprocess.run(
        [unshare, *namespaces, sys.executable, "-c", prologue + script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout
