"""Emacs's eglot, with no package of ours, meets openvaala's LSP face: Debian's emacs-nox and
elpa-eglot in batch mode, configured with README's snippet (taken from README.md, so the snippet is
what is tested), start the real openvaala-lsp (the model from the user config file: the scripted
fake model), open a file, change it without saving, and ask through eglot's own code action command
and the snippet's command (tests/e2e/plain_lsp/eglot.el). What Emacs showed and what eglot exchanged
come back as JSON. scripts/test.sh installs Emacs and eglot."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from plain_editors import editor_environment, readme_snippet
from turn_helpers import write_user_config

HERE = Path(__file__).parent / "plain_lsp"
EMACS = shutil.which("emacs")
SOURCE = "def add(a, b):\n    return a - b\n"
UNSAVED_LINE = "    return a - b  # checked by hand"
THINKING = 0.5  # seconds before the model's first byte in a turn (see `thinking`); no assertion


@functools.cache
def has_eglot() -> bool:
    if EMACS is None:
        return False
    probe = [EMACS, "--batch", "-q", "--eval", "(require 'eglot)"]
    return subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode == 0


def run_emacs(home: Path, workspace: Path, tmp_path: Path, typed: str) -> dict[str, Any]:
    if not has_eglot() and os.geteuid() != 0:  # as root (CI), scripts/test.sh installs them: no skip
        pytest.skip("needs Emacs with eglot: apt-get install emacs-nox elpa-eglot (scripts/test.sh does, as root)")
    assert has_eglot(), "emacs and eglot are missing: apt-get install emacs-nox elpa-eglot (scripts/test.sh does)"
    config = tmp_path / "openvaala-config.el"  # the user's config: README's snippet
    config.write_text(readme_snippet("elisp"))
    result = tmp_path / "result.json"
    env = editor_environment(
        home,
        HOME=str(tmp_path),  # no user's ~/.emacs.d
        OPENVAALA_TEST_CONFIG=str(config),
        OPENVAALA_TEST_RESULT=str(result),
    )
    # -q: no user init, but the site's start files, which put Debian's elpa packages on the load path
    command = [str(EMACS), "--batch", "-q", "-l", str(HERE / "eglot.el")]
    done = subprocess.run(
        command, cwd=workspace, env=env, input=typed, capture_output=True, text=True, timeout=180, check=False
    )
    output = f"--- emacs exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert result.exists(), f"Emacs wrote no results\n{output}"
    data: dict[str, Any] = json.loads(result.read_text())
    assert not data.get("error"), f"{data['error']}\n{output}\n--- eglot's events\n{data.get('events')}"
    return data


def thinking() -> ChatStream:
    """A model's first response in a turn, which takes a moment as a real model's does. Emacs 28's
    jsonrpc (1.0.14) handles what it reads together with the reply to a request (eglot's
    executeCommand) only when more output comes; a turn of the fake model could end within that read."""
    return ChatStream().pause(THINKING)


def answer(text: str, stream: ChatStream | None = None) -> Any:
    return (stream or ChatStream()).text(text).finish().response()


def test_eglot_asks_through_a_code_action_and_the_agent_reads_the_unsaved_buffer(
    home: Path, workspace: Path, tmp_path: Path, provider: FakeProviderServer
) -> None:
    write_user_config(home, provider)
    (workspace / ".git").mkdir()  # the project's root
    source = workspace / "app.py"
    source.write_text(SOURCE)
    provider.enqueue(
        "openai-chat",
        thinking().tool_call("c1", "read_file", [json.dumps({"path": "app.py"})]).finish().response(),
        answer("It subtracts; the comment says it was checked."),
        answer("The tests pass now.", thinking()),
    )

    data = run_emacs(home, workspace, tmp_path, typed="make the tests pass\n")

    assert data["buffer"].splitlines()[1] == UNSAVED_LINE and data["modified"] is data["modified_after"] is True
    assert source.read_text() == SOURCE  # never saved
    [menu] = data["menus"]  # what eglot-code-actions offered on a line without diagnostics
    assert menu["titles"] == ["Ask openvaala", "Explain with openvaala"]
    # the answers, as eglot shows a window/showMessage (Info) in the echo area
    first = "[eglot] Server reports (type=3): openvaala: It subtracts; the comment says it was checked."
    second = "[eglot] Server reports (type=3): openvaala: The tests pass now."
    assert [m for m in data["messages"] if "(type=3)" in m] == [first, second]
    if data["versions"]["eglot"] == "1.9":  # Debian bookworm's, which CI installs
        # no work-done progress (nor a claim of it): the steps are log-type messages in the echo area
        assert data["messages"] == [
            "[eglot] Server reports (type=4): openvaala: working",
            "[eglot] Server reports (type=4): openvaala: read_file app.py",
            first,
            "[eglot] Server reports (type=4): openvaala: working",
            second,
        ]
        assert "workDoneProgress" not in data["events"] and "$/progress" not in data["events"]

    requests = [r.json["messages"] for r in provider.requests_for("openai-chat")]
    assert len(requests) == 3
    asked = requests[0][-1]["content"]
    assert asked.startswith("The user selected this in app.py, lines 2-2") and UNSAVED_LINE in asked
    [read] = [m["content"] for m in requests[1] if m["role"] == "tool"]
    assert read.startswith("[unsaved: the text of app.py as ")
    assert "the file on disk differs]" in read and UNSAVED_LINE.strip() in read
    assert requests[2][-1]["content"] == "make the tests pass"
