"""The install README.md gives, run as written on a fresh home: a wheel built from a copy of the
checkout, installed into a virtual environment of its own, its commands linked onto PATH; then
`openvaala doctor --offline` and `openvaala-lsp` answering an editor's `initialize`. Both editor
READMEs send their users to the same lines. (The `local-model` extra is left out: it compiles
llama.cpp, which tests/e2e/test_local_model.py covers.)"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from openvaala_lsp.wire.client import LspClient, ServerBroke

ROOT = Path(__file__).parents[2]
INSTALL_MARK = "<!-- install: the wheel -->"
WAIT = 300.0  # building and installing take about 25 s; a bound for a broken test, not a measurement


def readme_install_lines() -> list[str]:
    """The shell lines of README.md's install block, without their comments."""
    block = (ROOT / "README.md").read_text().split(INSTALL_MARK, 1)[1]
    [body] = re.findall(r"^\s*```sh\n(.*?)\n```", block, re.DOTALL)[:1]
    return [line.split(" #")[0].strip() for line in body.splitlines() if line.strip()]


def copy_checkout(target: Path) -> None:
    """The checkout's files as a clone has them, with the work tree's edits (what a user builds from)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() and not name.startswith("editor-extensions/"):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def fresh_environment(home: Path) -> dict[str, str]:
    """A user's login environment on a machine with Python and nothing of openvaala's."""
    kept = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "LANG", "LC_", "SSL_", "TERM"))}
    return {
        **kept,
        "HOME": str(home),
        "PATH": f"{home}/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "OPENVAALA_HOST_IDLE_SECONDS": "1",
    }


def sh(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT)


async def test_the_readme_install_works_on_a_fresh_home(tmp_path: Path) -> None:
    checkout, home = tmp_path / "openvaala", tmp_path / "home"
    checkout.mkdir()
    home.mkdir()
    copy_checkout(checkout)
    env = fresh_environment(home)
    *install, doctor = readme_install_lines()
    assert doctor == "openvaala doctor --offline" and install[0].startswith("python3 -m pip wheel")
    for line in install:
        done = sh(line, checkout, env)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"

    done = sh(doctor, checkout, env)  # no model yet: doctor says so, and what to run
    assert done.returncode == 1 and "no model is configured; run openvaala" in done.stdout, done.stderr
    assert f"database: {home}/.local/share/openvaala/openvaala.duckdb" in done.stdout
    assert "Traceback" not in done.stderr
    done = sh("openvaala setup --provider ollama --no-check --yes", checkout, env)
    assert done.returncode == 0 and f"to {home}/.config/openvaala/config.toml" in done.stdout, done.stderr
    done = sh(doctor, checkout, env)
    assert done.returncode == 0 and "everything configured works" in done.stdout, done.stdout + done.stderr

    # an editor starting the installed openvaala-lsp from PATH, in a project folder
    project = tmp_path / "project"
    project.mkdir()
    server = shutil.which("openvaala-lsp", path=env["PATH"])
    assert server == f"{home}/.local/bin/openvaala-lsp"
    process = await asyncio.create_subprocess_exec(
        server, cwd=project, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    peer = LspClient(process.stdout, process.stdin)
    try:
        folder = {"uri": project.as_uri(), "name": project.name}
        try:
            init = await asyncio.wait_for(peer.initialize({"workspaceFolders": [folder]}), 60)
        except ServerBroke:  # the host the wheel installed could not start: its log says why
            log = home / ".local/state/openvaala/host.log"
            pytest.fail(f"openvaala-lsp could not start its host:\n{log.read_text()[-2000:] if log.exists() else ''}")
        assert init["capabilities"]["experimental"]["openvaala"]["serverVersion"] == "0.2.0"
        models = await peer.request("openvaala/listModels", {})
        assert [model["ref"]["provider"] for model in models["models"]] == ["ollama"]  # the user config it set up
        await peer.shutdown()
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await peer.close()
    assert (home / ".local/share/openvaala/openvaala.duckdb").exists()  # the host it started made the history


def test_the_editor_readmes_tell_the_same_install() -> None:
    for readme in ("editor-extensions/vscode/README.md", "editor-extensions/nvim/README.md"):
        text = (ROOT / readme).read_text()
        assert "README.md#install" in text, readme  # the root README's section
        for wrong in ("pip install openvaala`", "pip install openvaala ", "pipx install openvaala-lsp`"):
            assert wrong not in text, (readme, wrong)
