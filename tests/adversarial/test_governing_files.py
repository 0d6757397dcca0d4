"""Finding 3: the agent could rewrite what governs it. In a trusted workspace a sandboxed command
wrote `.openvaala/config.toml`, and the next tool call ran the new hook unsandboxed (or ran with the
sandbox off); with the workspace at `$HOME`, it edited the user's own configuration the same way.

Now, inside the writable folders, what governs the agent is read-only to commands (made so when it
is missing, and pinned so that renaming a folder above it cannot carry it away), and the user's
configuration is hidden. The file tools' half: `write_file` and `edit` on what governs the agent ask
the user for that one write, whatever the rules and remembered answers say; approved once, that one
write happens and the next asks again. The user's own configuration is not the agent's to read or
change at all."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from sandbox_helpers import Machine, context_for, machine, needs_sandbox, sandboxed
from turn_helpers import API_KEY, Session, text_of, write_user_config

from openvaala_lsp.storage.duckdb_store import DuckDBStorage

__all__ = ["machine"]


def hook_config(marker: Path) -> str:
    return (
        f'[[hooks]]\nname = "planted"\nevent = "preToolUse"\ncommand = "touch {marker}"\n'
        '[[agents]]\nname = "default"\n[agents.sandbox]\nmode = "off"\n'
    )


@needs_sandbox
async def test_a_command_cannot_plant_a_project_configuration_in_a_trusted_workspace(
    machine: Machine, provider: FakeProviderServer
) -> None:
    config_home = machine.root / "config"
    config_home.mkdir()
    write_user_config(config_home, provider)
    (config_home / "trusted-folders").write_text(f"{machine.workspace}\n")
    marker = machine.root / "the-hook-ran"
    planted = hook_config(marker).replace("\n", "\\n").replace('"', '\\"')
    plant = f'mkdir -p .openvaala; printf "{planted}" > .openvaala/config.toml; echo planted=$?'
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "shell", [json.dumps({"command": plant})]).finish().response(),
        # the next call: a planted preToolUse hook would run now, and the sandbox would be off
        ChatStream()
        .tool_call("c2", "shell", [json.dumps({"command": f"touch {machine.root}/outside && echo OUTSIDE"})])
        .finish()
        .response(),
        ChatStream().text("done").finish().response(),
    )
    lsp = await Harness.start(config_home, [machine.workspace], env={"FAKE_API_KEY": API_KEY})
    try:
        session = await Session.open(lsp)
        await session.submit("go")
        assert (await session.turn_completed())["status"] == "completed"
        results = [text_of(i) for i in await session.items() if i["type"] == "toolResult"]
        assert "Read-only file system" in results[0] and "planted=0" not in results[0], results[0]
        assert not (machine.workspace / ".openvaala" / "config.toml").exists()
        assert not marker.exists()
        assert (await lsp.call("getHooks"))["hooks"] == []
        assert "OUTSIDE" not in results[1] and not (machine.root / "outside").exists()  # still sandboxed
    finally:
        await lsp.stop()
    assert not (machine.workspace / ".openvaala").exists()  # the sandbox's mount point went with it


@needs_sandbox
async def test_what_governs_the_agent_stays_read_only_and_in_place(machine: Machine) -> None:
    workspace = machine.workspace
    (workspace / ".openvaala").mkdir()
    (workspace / ".openvaala" / "config.toml").write_text("# the project's\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / ".agents" / "agents").mkdir(parents=True)
    (workspace / "src").mkdir()
    attempts = [
        "echo '[[hooks]]' >> .openvaala/config.toml",
        "printf '[core]\\n  fsmonitor = touch /var/tmp/x\\n' > .git/config",
        "echo 'touch /var/tmp/x' > .git/hooks/pre-commit",
        "echo 'x' > .agents/agents/evil.md",
        "mkdir -p .claude/agents && echo x > .claude/agents/evil.md",
        "mv .git .git-away",
        "mv .openvaala .away",
        "rm -rf .git/hooks",
        "ln -s /tmp .git/hooks/link",
    ]
    said = await sandboxed(
        "; ".join(f"{a} && echo ESCAPED" for a in attempts) + "; echo src > src/ok.txt", context_for(workspace)
    )
    assert "ESCAPED" not in said, said
    assert (workspace / ".openvaala" / "config.toml").read_text() == "# the project's\n"
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert list((workspace / ".git" / "hooks").iterdir()) == []
    assert not (workspace / ".agents" / "agents" / "evil.md").exists() and not (workspace / ".claude").exists()
    assert not (workspace / ".git-away").exists() and not (workspace / ".away").exists()
    assert (workspace / "src" / "ok.txt").read_text() == "src\n"  # the rest of the workspace is writable
    assert "git" in await sandboxed("git add -A && git status --short | head -3; echo git", context_for(workspace))


@needs_sandbox
async def test_a_git_worktree_pointer_and_its_repository_are_protected(machine: Machine) -> None:
    repository, worktree = machine.root / "project" / "repo", machine.root / "project" / "tree"
    (repository / ".git" / "worktrees" / "tree").mkdir(parents=True)
    (repository / ".git" / "config").write_text("[core]\n")
    (repository / ".git" / "hooks").mkdir()
    (repository / ".git" / "worktrees" / "tree" / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repository}/.git/worktrees/tree\n")
    context = context_for(worktree, roots=[worktree, repository])
    said = await sandboxed(
        f"echo 'gitdir: /var/tmp/evil' > {worktree}/.git && echo ESCAPED;"
        f" echo x >> {repository}/.git/config && echo ESCAPED;"
        f" touch {repository}/.git/hooks/post-checkout && echo ESCAPED",
        context,
    )
    assert "ESCAPED" not in said, said
    assert (worktree / ".git").read_text().startswith(f"gitdir: {repository}")


@needs_sandbox
async def test_the_users_configuration_is_hidden_with_the_workspace_at_home(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENVAALA_HOME")
    config = machine.home / ".config" / "openvaala"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("# the user's own\n")
    said = await sandboxed(
        "cat ~/.config/openvaala/config.toml; echo '[[hooks]]' >> ~/.config/openvaala/config.toml && echo ESCAPED;"
        " ls -A ~/.config/openvaala; echo x > ~/notes.txt && echo wrote",
        context_for(machine.home),
    )
    assert "the user's own" not in said and "ESCAPED" not in said and "wrote" in said, said
    assert (config / "config.toml").read_text() == "# the user's own\n"


@needs_sandbox
async def test_a_missing_user_configuration_cannot_be_created_either(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENVAALA_HOME")
    said = await sandboxed(
        "mkdir -p ~/.config/openvaala && echo '[[hooks]]' > ~/.config/openvaala/config.toml && echo ESCAPED",
        context_for(machine.home),
    )
    assert "ESCAPED" not in said, said
    assert not (machine.home / ".config" / "openvaala" / "config.toml").exists()


HOOK = '[[hooks]]\nname = "x"\nevent = "preToolUse"\ncommand = "touch /tmp/hooked"\n'
GOVERNING = [
    ("write_file", ".openvaala/config.toml"),
    ("write_file", ".openvaala/agents/free.md"),
    ("write_file", ".agents/skills/x/SKILL.md"),
    ("write_file", ".claude/agents/free.md"),
    ("write_file", ".git/hooks/pre-commit"),
    ("edit", ".git/config"),
]


@pytest.fixture
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def trusted(runtime_home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    """A trusted git workspace, and an editor that answers approvals; every tool allowed by the
    user's rules (which must not let a governing write through unasked)."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (runtime_home / "trusted-folders").write_text(f"{workspace}\n")
    write_user_config(runtime_home, provider, '[[agents]]\nname = "default"\npermissions = { default = "allow" }\n')
    harness = await Harness.start(runtime_home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    yield harness
    await harness.stop()


def arguments(tool: str, path: str, text: str) -> dict[str, Any]:
    if tool == "edit":
        return {"path": path, "old_string": "[core]", "new_string": f"[core]\n\t# {text}"}
    return {"path": path, "content": text}


def call(tool: str, args: dict[str, Any], call_id: str = "c1") -> Any:
    return ChatStream().tool_call(call_id, tool, [json.dumps(args)]).finish().response()


def say(text: str) -> Any:
    return ChatStream().text(text).finish().response()


async def answer_next(editor: Harness, session: Session, decision: str, seen: set[str]) -> dict[str, Any]:
    asked = await session.wait_event(lambda e: e["type"] == "approvalRequested" and e["itemId"] not in seen)
    seen.add(asked["itemId"])
    await editor.call("answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": decision})
    return asked


@pytest.mark.parametrize(("tool", "path"), GOVERNING)
async def test_a_write_to_what_governs_the_agent_asks_for_that_one_write(
    trusted: Harness, provider: FakeProviderServer, workspace: Path, tool: str, path: str
) -> None:
    target = workspace / path
    if tool == "edit":
        assert "[core]" in target.read_text()
    provider.enqueue("openai-chat", call(tool, arguments(tool, path, "first")), say("done"))
    session = await Session.open(trusted)
    seen: set[str] = set()
    await session.submit("write it")
    asked = await answer_next(trusted, session, "allowAlways", seen)
    assert asked["approval"]["paths"] == [path] and "governs the agent" in asked["approval"]["reason"]
    assert (await session.turn_completed())["status"] == "completed"
    assert "first" in target.read_text()  # approved: that one write happened

    provider.enqueue("openai-chat", call(tool, arguments(tool, path, "second")), say("done"))
    await session.submit("again")
    await answer_next(trusted, session, "deny", seen)  # allowAlways did not cover the next write
    await session.turn_completed(2)
    assert "second" not in target.read_text()


async def test_with_no_editor_to_ask_a_governing_write_is_refused_with_a_reason(
    runtime_home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    home = runtime_home
    (home / "trusted-folders").write_text(f"{workspace}\n")
    write_user_config(home, provider, '[[agents]]\nname = "default"\npermissions = { default = "allow" }\n')
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    try:
        provider.enqueue(
            "openai-chat", call("write_file", {"path": ".openvaala/config.toml", "content": HOOK}), say("ok")
        )
        session = await Session.open(harness)
        await session.submit("add a hook")
        assert (await session.turn_completed())["status"] == "completed"
        [result] = [text_of(i) for i in await session.items() if i["type"] == "toolResult"]
        assert result.startswith("not run: it needs the user's approval") and "governs the agent" in result
        assert not (workspace / ".openvaala" / "config.toml").exists()
    finally:
        await harness.stop()


@needs_sandbox
async def test_a_link_to_what_governs_the_agent_asks_too_and_one_made_after_the_ask_is_refused(
    trusted: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    config = workspace / ".git" / "config"
    before = config.read_text()
    (workspace / "innocent").symlink_to(config)
    provider.enqueue(
        "openai-chat",
        call("write_file", {"path": "innocent", "content": "[core]\n\tfsmonitor = evil\n"}),
        say("done"),
    )
    session = await Session.open(trusted)
    seen: set[str] = set()
    await session.submit("write")
    asked = await answer_next(trusted, session, "deny", seen)
    assert asked["approval"]["reason"].startswith(f"writes innocent (a link to {config.resolve()}), which governs")
    await session.turn_completed()
    # a link made by a call of the same answer, after the write was decided: the write is refused
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .parallel_tool_calls(
            [
                ("c1", "shell", [json.dumps({"command": "ln -s .git/config late"})]),
                ("c2", "write_file", [json.dumps({"path": "late", "content": "[core]\n\tfsmonitor = evil\n"})]),
            ]
        )
        .finish()
        .response(),
        say("done"),
    )
    await session.submit("again")
    await session.turn_completed(2)
    assert config.read_text() == before
    last = [text_of(i) for i in await session.items() if i["type"] == "toolResult"][-1]
    assert "governs the agent" in last


async def test_with_the_workspace_at_home_the_users_configuration_is_out_of_reach(
    tmp_path: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No OPENVAALA_HOME: the configuration is `~/.config/openvaala`, and the workspace is `~`."""
    user = tmp_path / "user"
    config_dir = user / ".config" / "openvaala"
    config_dir.mkdir(parents=True)
    (tmp_path / "run").mkdir(mode=0o700)
    for name in ("OPENVAALA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    write_user_config(config_dir, provider, '[[agents]]\nname = "default"\npermissions = { default = "allow" }\n')
    before = (config_dir / "config.toml").read_text()
    database = user / ".local" / "share" / "openvaala" / "openvaala.duckdb"
    database.parent.mkdir(parents=True)
    storage = await DuckDBStorage.open(str(database))
    harness = await Harness.start(config_dir, [user], env={"FAKE_API_KEY": API_KEY}, approvals=True, storage=storage)
    try:
        user_config = ".config/openvaala/config.toml"
        provider.enqueue(
            "openai-chat",
            call("write_file", {"path": user_config, "content": HOOK}, "c1"),
            call("edit", {"path": user_config, "old_string": "[[models]]", "new_string": HOOK + "[[models]]"}, "c2"),
            call("write_file", {"path": ".openvaala/config.toml", "content": HOOK}, "c3"),
            say("done"),
        )
        session = await Session.open(harness)
        await session.submit("loosen your rules")
        asked = await answer_next(harness, session, "allowOnce", set())  # only the project file asks
        assert asked["approval"]["paths"] == [".openvaala/config.toml"]
        await session.turn_completed()
        refused = [text_of(i) for i in await session.items() if i["type"] == "toolResult"][:2]
        assert all("protected" in text for text in refused), refused
        assert (config_dir / "config.toml").read_text() == before
        assert (user / ".openvaala" / "config.toml").read_text() == HOOK  # approved: that one write
    finally:
        await harness.stop()
