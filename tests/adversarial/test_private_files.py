"""Finding 9: others can read the history. The database and its WAL were 0644 in a 0755 directory, so
any local user read every conversation; and a `/tmp/openvaala-UID` another user made first stopped
openvaala from starting.

Checked with the real front and host: after a turn (with an image, so a blob file exists) every
directory and file openvaala made is closed to other users, in both layouts (`OPENVAALA_HOME`, and the
XDG directories); looser modes an older version left are tightened at the next start; the run
directory follows its rules (`XDG_RUNTIME_DIR` only when it is the user's own, the state directory,
`/tmp` last), and a `/tmp/openvaala-UID` squatted by another user (a throwaway one, made with
`useradd`, in a mount namespace of the test's own so the machine's `/tmp` is never touched) only
moves openvaala to a sibling.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient
from turn_helpers import API_KEY, Session

from openvaala_lsp.rundir import MAX_SOCKET_PATH, run_dir

pytestmark = pytest.mark.e2e

WAIT = 20.0
IS_ROOT = os.geteuid() == 0


def definitions(provider: FakeProviderServer) -> dict[str, Any]:
    model = {
        "ref": {"provider": "fake", "name": "fake-model"},
        "api": "openai-chat",
        "baseUrl": provider.base_url("openai-chat"),
        "apiKeyEnv": "FAKE_API_KEY",
        "contextWindow": 100_000,
    }
    return {"models": [model]}


def open_to_others(root: Path) -> list[str]:
    """Every path under `root` (itself included) that another user could read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path} {stat.filemode(mode)}")
    return found


def layout(tmp_path: Path, kind: str) -> tuple[dict[str, str], list[Path], Path]:
    """The environment of one layout, the directories openvaala keeps its files in, and its run dir."""
    if kind == "home":
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        return {"OPENVAALA_HOME": str(home)}, [home], home / "run"
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        "OPENVAALA_HOME": "",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    return env, [tmp_path / "data" / "openvaala", tmp_path / "state" / "openvaala", runtime / "openvaala"], runtime


async def host_gone(run: Path) -> None:
    """The host of `run` exited (it removes its pid file last)."""
    async with asyncio.timeout(WAIT):
        while (run / "host.pid").exists():
            await asyncio.sleep(0.05)


async def a_turn_with_an_image(env: dict[str, str], workspace: Path, provider: FakeProviderServer) -> LspClient:
    lsp = await LspClient.spawn(
        workspace, cwd=workspace, env={"FAKE_API_KEY": API_KEY, "OPENVAALA_STANDALONE": "", **env}
    )
    await lsp.initialize([workspace])
    await lsp.call("setDefinitions", definitions(provider))
    session = await Session.open(lsp)
    provider.enqueue("openai-chat", ChatStream().text("a picture").finish().response())
    image = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(os.urandom(4096)).decode()}
    await lsp.call("submitInput", {"conversationId": session.id, "content": [image]})
    assert (await session.turn_completed())["status"] == "completed"
    return lsp


@pytest.mark.parametrize("kind", ["home", "xdg"])
async def test_nothing_is_open_to_other_users_after_a_turn(
    tmp_path: Path, workspace: Path, provider: FakeProviderServer, kind: str
) -> None:
    env, roots, run = layout(tmp_path, kind)
    lsp = await a_turn_with_an_image(env, workspace, provider)
    data, state = roots[0], roots[0 if kind == "home" else 1]
    try:
        made = [
            data / "openvaala.duckdb",
            data / "openvaala.duckdb.journal",
            state / ("logs" if kind == "home" else ""),
        ]
        assert all(path.exists() for path in made), made
        assert [*(data / "openvaala.duckdb.blobs").iterdir()], "the image has a file of its own"
        assert list(run.rglob("host.sock")), "the host listens in its run directory"
        # while the host runs: its WAL, socket, locks and pid file too
        assert [problem for root in roots for problem in open_to_others(root)] == []
    finally:
        await lsp.shutdown()
    await host_gone(next(run.rglob("host.lock")).parent)
    assert [problem for root in roots for problem in open_to_others(root)] == []


async def test_looser_modes_of_an_older_version_are_tightened(
    tmp_path: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    env, [home], run = layout(tmp_path, "home")
    lsp = await a_turn_with_an_image(env, workspace, provider)
    await lsp.shutdown()
    await host_gone(run)
    # what an older openvaala left: its directories 0755, its files 0644 (its run dir was always 0700)
    for path in [home, *home.rglob("*")]:
        if path.is_relative_to(run):
            continue
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert open_to_others(home)

    again = await LspClient.spawn(workspace, cwd=workspace, env={"OPENVAALA_STANDALONE": "", **env})
    try:
        await again.initialize([workspace])
        await again.call("listConversations")  # the database is open
        assert open_to_others(home) == []
    finally:
        await again.shutdown()


@pytest.fixture
def short_path() -> Any:
    """A directory whose paths leave room for a socket name (pytest's may not, under xdist)."""
    path = Path(tempfile.mkdtemp(prefix="ov-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_run_directory_rules(short_path: Path) -> None:
    tmp_path = short_path
    uid = os.geteuid()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    home = tmp_path / "user"
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    base = {"HOME": str(home)}

    # the user's own XDG_RUNTIME_DIR first
    assert run_dir({**base, "XDG_RUNTIME_DIR": str(runtime)}, tmp=str(tmp)).path == str(runtime / "openvaala")
    # one others may write to is not the user's: the state directory then
    runtime.chmod(0o777)
    state_run = home / ".local" / "state" / "openvaala" / "run"
    assert run_dir({**base, "XDG_RUNTIME_DIR": str(runtime)}, tmp=str(tmp)).path == str(state_run)
    assert run_dir({**base, "XDG_RUNTIME_DIR": "relative/dir"}, tmp=str(tmp)).path == str(state_run)
    assert run_dir(base, tmp=str(tmp)).path == str(state_run)
    # OPENVAALA_HOME wins
    assert run_dir({**base, "OPENVAALA_HOME": str(tmp_path / "h")}, tmp=str(tmp)).path == str(tmp_path / "h" / "run")

    # /tmp only when the state directory cannot hold a socket: a home with no room in sun_path...
    deep = tmp_path / ("d" * MAX_SOCKET_PATH)
    short = run_dir({"HOME": str(deep)}, tmp=str(tmp))
    assert short.path.startswith(f"{tmp}/openvaala-{uid}/") and len(short.socket) <= MAX_SOCKET_PATH
    assert short.private == (f"{tmp}/openvaala-{uid}", short.path)
    # ... or one the user cannot make (here under a file: root can write anywhere else)
    (tmp_path / "a-file").write_text("")
    assert run_dir({"HOME": str(tmp_path / "a-file" / "home")}, tmp=str(tmp)).path == f"{tmp}/openvaala-{uid}"

    # a squatted name moves openvaala to the first sibling that is its own or free, the same for every front
    (tmp / f"openvaala-{uid}").symlink_to(tmp_path)
    assert run_dir({"HOME": str(deep)}, tmp=str(tmp)).private[0] == f"{tmp}/openvaala-{uid}.1"
    (tmp / f"openvaala-{uid}.1").mkdir(mode=0o755)  # the user's, but open: not a run directory
    assert run_dir({"HOME": str(deep)}, tmp=str(tmp)).private[0] == f"{tmp}/openvaala-{uid}.2"
    (tmp / f"openvaala-{uid}.2").mkdir(mode=0o700)
    assert run_dir({"HOME": str(deep)}, tmp=str(tmp)).private[0] == f"{tmp}/openvaala-{uid}.2"
    if IS_ROOT:
        os.chown(tmp / f"openvaala-{uid}.2", 65534, 65534)
        assert run_dir({"HOME": str(deep)}, tmp=str(tmp)).private[0] == f"{tmp}/openvaala-{uid}.3"


# Runs as root inside a mount namespace of its own with a new tmpfs on /tmp: squats
# /tmp/openvaala-0 as the throwaway user, then an editor starts openvaala with nothing but /tmp for
# its run directory (no OPENVAALA_HOME, no XDG_RUNTIME_DIR, a state directory too deep for a socket).
SQUATTED = textwrap.dedent(
    """
    import asyncio, json, os, signal, subprocess, sys
    from pathlib import Path

    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp"], check=True)
    uid, gid = int(sys.argv[1]), int(sys.argv[2])
    squatted = Path(f"/tmp/openvaala-{os.geteuid()}")
    squatted.mkdir(mode=0o700)
    (squatted / "host.sock").write_text("not a socket")
    os.chown(squatted, uid, gid)
    os.chown(squatted / "host.sock", uid, gid)
    sys.path.insert(0, sys.argv[3])
    from lsp_client import LspClient
    from openvaala_lsp.rundir import run_dir

    deep = Path("/tmp") / ("d" * 100)
    env = {
        "OPENVAALA_HOME": "", "XDG_RUNTIME_DIR": "", "OPENVAALA_STANDALONE": "",
        "HOME": "/tmp/user", "XDG_DATA_HOME": "/tmp/data", "XDG_STATE_HOME": str(deep),
    }
    os.makedirs("/tmp/project")

    async def main():
        lsp = await LspClient.spawn(Path("/tmp/project"), cwd=Path("/tmp/project"), env=env)
        await lsp.initialize([Path("/tmp/project")])
        created = await lsp.call("createConversation")
        listed = await lsp.call("listConversations")
        run = run_dir({**os.environ, **env})
        pid = int(Path(run.pid_file).read_text())
        await lsp.shutdown()
        os.kill(pid, signal.SIGKILL)
        owner = squatted.stat().st_uid
        return {
            "created": created["id"], "listed": [e["conversation"]["id"] for e in listed["items"]],
            "run": run.path, "squatted_owner": owner, "squatted": sorted(p.name for p in squatted.iterdir()),
        }

    print(json.dumps(asyncio.run(main())))
    """
)


@pytest.fixture
def throwaway_user() -> Any:
    if not IS_ROOT:
        pytest.skip("needs root: another user must own the squatted directory (useradd)")
    if shutil.which("useradd") is None or shutil.which("unshare") is None:
        pytest.skip("needs useradd and unshare")
    name = f"ovsquat{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        import pwd

        entry = pwd.getpwnam(name)
        yield entry.pw_uid, entry.pw_gid
    finally:
        subprocess.run(["userdel", name], check=False)


def test_a_run_directory_squatted_by_another_user(throwaway_user: tuple[int, int]) -> None:
    uid, gid = throwaway_user
    tests = str(Path(__file__).parents[1])
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", SQUATTED, str(uid), str(gid), tests],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["listed"] == [result["created"]]
    assert result["run"].startswith(f"/tmp/openvaala-{os.geteuid()}.1/")
    assert result["squatted_owner"] == uid and result["squatted"] == ["host.sock"]  # left alone
