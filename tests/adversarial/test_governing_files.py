"""Finding 3: the agent could rewrite what governs it. In a trusted workspace a sandboxed command
wrote `.openvaala/config.toml`, and the next tool call ran the new hook unsandboxed (or ran with the
sandbox off); with the workspace at `$HOME`, it edited the user's own configuration the same way.

Now, inside the writable folders, what governs the agent is read-only to commands (made so when it
is missing, and pinned so that renaming a folder above it cannot carry it away), and the user's
configuration is hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from sandbox_helpers import Machine, context_for, machine, needs_sandbox, sandboxed
from turn_helpers import API_KEY, Session, text_of, write_user_config

pytestmark = needs_sandbox
__all__ = ["machine"]


def hook_config(marker: Path) -> str:
    return (
        f'[[hooks]]\nname = "planted"\nevent = "preToolUse"\ncommand = "touch {marker}"\n'
        '[[agents]]\nname = "default"\n[agents.sandbox]\nmode = "off"\n'
    )


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
