"""Finding 11: "allow always" covered more than the user approved. Allowing `python3 build.py` outside
the sandbox remembered `python3`, so `python3 -c "..."` then ran outside unasked; the same with
`bash -c`, `timeout 60 <anything>`, `find -exec`, `git log --output=<outside>`. And a `core.fsmonitor`
planted in `.git/config` from inside the sandbox ran outside it during an always-allowed `git status`.

Each case approves a first command outside the sandbox with `allowAlways` (it runs for real), then
has the model run a second one: it must be asked again (the test denies it) and leave no trace. The
git cases use real git in a real repository, the plant made by a real sandboxed command, and markers
outside the workspace, where only a process outside the sandbox can write.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.tools import sandbox

needs_sandbox = pytest.mark.skipif(not sandbox.state().usable, reason="the sandbox cannot start here")


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def editor(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    """An editor that answers approvals, for an agent with the default rules: the shell runs in the
    sandbox unasked, and asks before leaving it."""
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await harness.call("setDefinitions", definitions(provider))
    yield harness
    await harness.stop()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace: a command in the sandbox cannot write there (its /tmp is private)."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


def shell(command: str, call_id: str, *, outside_sandbox: bool = False, workdir: str | None = None) -> Any:
    arguments: dict[str, Any] = {"command": command}
    if outside_sandbox:
        arguments |= {"outside_sandbox": True, "justification": "needs the real machine"}
    if workdir is not None:
        arguments["workdir"] = workdir
    return ChatStream().tool_call(call_id, "shell", [json.dumps(arguments)]).finish().response()


def done() -> Any:
    return ChatStream().text("done").finish().response()


async def approve_always(editor: Harness, provider: FakeProviderServer, session: Session, command: str) -> None:
    """The model runs `command` outside the sandbox and the user answers `allowAlways`."""
    provider.enqueue("openai-chat", shell(command, "first", outside_sandbox=True), done())
    await session.submit("first")
    asked = await session.wait_event(lambda e: e["type"] == "approvalRequested")
    assert asked["approval"]["command"] == command
    await editor.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowAlways"}
    )
    assert (await session.turn_completed())["status"] == "completed"


async def asked_for(editor: Harness, session: Session, turn: int) -> list[str]:
    """The commands turn number `turn` asked about (each denied), once it ended."""
    seen = {e["itemId"] for e in session.events() if e["type"] == "approvalRequested"}
    asked: list[str] = []
    while True:
        event = await session.wait_event(
            lambda e: (
                (e["type"] == "approvalRequested" and e["itemId"] not in seen)
                or sum(1 for x in session.events() if x["type"] == "turnCompleted") >= turn
            )
        )
        if event["type"] != "approvalRequested":
            return asked
        seen.add(event["itemId"])
        asked.append(event["approval"]["command"])
        await editor.call(
            "answerApproval", {"conversationId": session.id, "itemId": event["itemId"], "decision": "deny"}
        )


@pytest.mark.parametrize(
    ("approved", "then"),
    [
        ("python3 build.py", "python3 -c \"open('pwned', 'w').close()\""),
        ("bash -c 'echo built'", "bash -c 'touch pwned'"),
        ("timeout 60 python3 build.py", "timeout 60 touch pwned"),
        ("find . -name build.py", "find . -name build.py -exec touch pwned {} +"),
        ("env -u NOTHING python3 build.py", "env -u NOTHING touch pwned"),
        ("nice python3 build.py", "nice python3 -c \"open('pwned', 'w').close()\""),
        ("xargs -a build.py echo", "xargs -a build.py touch pwned"),
    ],
)
async def test_an_interpreter_a_shell_or_a_wrapper_is_remembered_as_the_whole_command(
    editor: Harness, provider: FakeProviderServer, workspace: Path, approved: str, then: str
) -> None:
    (workspace / "build.py").write_text("print('built')\n")
    session = await Session.open(editor)
    await approve_always(editor, provider, session, approved)
    provider.enqueue(
        "openai-chat",
        shell(approved, "again", outside_sandbox=True),  # exactly what was approved: runs unasked
        shell(then, "then", outside_sandbox=True),
        done(),
    )
    await session.submit("second")
    assert await asked_for(editor, session, 2) == [then]
    assert not (workspace / "pwned").exists()


@pytest.mark.parametrize(
    ("approved", "extended", "then"),
    [
        ("git log --oneline", "git log -1 --stat", ["git log --output={target}", "git log --outp {target}"]),
        (
            "git diff --stat",
            "git diff --stat HEAD",
            ["git diff --output={target}", "git diff --no-index {secret} a.txt"],
        ),
        ("git show --stat", "git show HEAD --name-only", ["git show --output={target}", "git show --ext-diff"]),
    ],
)
async def test_git_with_an_option_that_writes_files_or_reads_outside_is_asked_again(
    editor: Harness,
    provider: FakeProviderServer,
    workspace: Path,
    outside: Path,
    approved: str,
    extended: str,
    then: list[str],
) -> None:
    git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("a\n")
    commit(workspace)
    (outside / "secret").write_text("not for the model\n")
    session = await Session.open(editor)
    await approve_always(editor, provider, session, approved)
    commands = [command.format(target=outside / "written", secret=outside / "secret") for command in then]
    provider.enqueue(
        "openai-chat",
        shell(extended, "extended", outside_sandbox=True),  # a plain extension of the approved command
        *[shell(command, f"then-{index}", outside_sandbox=True) for index, command in enumerate(commands)],
        done(),
    )
    await session.submit("second")
    assert await asked_for(editor, session, 2) == commands
    assert not (outside / "written").exists()
    results = [text_of(item) for item in await session.items() if item["type"] == "toolResult"]
    assert results[1].endswith("[exit code 0]")  # the extension ran unasked
    assert not any("not for the model" in result for result in results)


@needs_sandbox
async def test_a_fsmonitor_planted_in_git_config_from_the_sandbox_never_runs_outside(
    editor: Harness, provider: FakeProviderServer, workspace: Path, outside: Path
) -> None:
    git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("a\n")
    commit(workspace)
    marker = outside / "fsmonitor-ran"
    session = await Session.open(editor)
    await approve_always(editor, provider, session, "git status")
    plant = f"git config core.fsmonitor {shlex.quote(f'touch {marker}; echo')}"
    provider.enqueue(
        "openai-chat",
        shell(plant, "plant"),  # inside the sandbox, where it may or may not be refused
        shell("git status --short", "status", outside_sandbox=True),
        done(),
    )
    await session.submit("second")
    assert await asked_for(editor, session, 2) == []  # the remembered rule still covers `git status`
    results = [text_of(item) for item in await session.items() if item["type"] == "toolResult"]
    assert results[-1].endswith("[exit code 0]")
    assert not marker.exists()


@needs_sandbox
async def test_a_nested_repository_planted_from_the_sandbox_runs_no_command_outside(
    editor: Harness, provider: FakeProviderServer, workspace: Path, outside: Path
) -> None:
    """A repository made inside the workspace is all the agent's: its config, hooks and attributes."""
    git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("a\n")
    commit(workspace)
    session = await Session.open(editor)
    await approve_always(editor, provider, session, "git status")
    plant = " && ".join(
        [
            "git init -q sub",
            "cd sub",
            f"git config core.fsmonitor {shlex.quote(f'touch {outside}/fsmonitor; echo')}",
            f"git config filter.evil.clean {shlex.quote(f'touch {outside}/filter; cat')}",
            f"git config diff.evil.textconv {shlex.quote(f'touch {outside}/textconv; cat')}",
            f"printf '#!/bin/sh\\ntouch {outside}/hook\\n' > .git/hooks/post-index-change",
            "chmod +x .git/hooks/post-index-change",
            "echo '*.txt filter=evil diff=evil' > .gitattributes",
            "echo a > f.txt",
            "git add f.txt .gitattributes",
            "git -c user.email=a@example.com -c user.name=a commit -qm plant",
            "echo b > f.txt",  # the same size: git must read (and filter) the file to see the change
        ]
    )
    provider.enqueue(
        "openai-chat",
        shell(plant, "plant"),
        shell("git status --short", "status", outside_sandbox=True, workdir="sub"),
        done(),
    )
    await session.submit("second")
    assert await asked_for(editor, session, 2) == []
    results = [text_of(item) for item in await session.items() if item["type"] == "toolResult"]
    assert "[exit code 0]" in results[-2], results[-2]  # the plant worked
    assert "M f.txt" in results[-1] and results[-1].endswith("[exit code 0]")
    assert sorted(path.name for path in outside.iterdir()) == []


def git(directory: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(directory), *arguments], check=True, capture_output=True)


def commit(directory: Path) -> None:
    git(directory, "add", "-A")
    git(directory, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-qm", "first")
