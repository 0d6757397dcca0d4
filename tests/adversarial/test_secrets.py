"""Finding 4: secrets were readable and ended up in the history. `cat ~/.ssh/id_rsa`,
`~/.aws/credentials` and `env` (with the provider's API key) returned their contents, and the
history database itself could be copied out by a command; with the workspace at `$HOME`, the file
tools read the same files as any other of the workspace, and the skill tool read a skill whose path
was a credential file.

Now the sandbox shows credential paths (and an agent's `denyRead`) empty, hides the runtime's own
files, and commands get an environment without what looks like a secret, never a model's key. The
file and skill tools' half: the credential paths, an agent's `denyRead` and openvaala's own files
are refused by `read_file`, `write_file` and `edit`, left out by `grep` and `glob`, and never read by
the skill tool; their contents reach neither the model nor the history."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from sandbox_helpers import SECRET_KEY, Machine, context_for, machine, needs_sandbox, sandboxed
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.definitions import Sandbox
from openvaala_lsp.tools.environment import is_secret, tool_environment
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

__all__ = ["machine"]


@needs_sandbox
async def test_credentials_read_empty(machine: Machine, warm: WarmSandboxes | None) -> None:
    (machine.workspace / "key-link").symlink_to(machine.home / ".ssh" / "id_rsa")
    context = context_for(machine.workspace, warm=warm)
    for _ in range(3):  # a sandbox of its own, then warm ones
        said = await sandboxed(
            "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc key-link; ls -A ~/.ssh ~/.aws;"
            " cp ~/.ssh/id_rsa stolen 2>&1; cat /etc/shadow | head -1",
            context,
        )
        assert "PRIVATE KEY" not in said and "not-a-real" not in said and "root:" not in said, said
    assert not (machine.workspace / "stolen").exists() or (machine.workspace / "stolen").read_text() == ""


@needs_sandbox
async def test_the_history_database_cannot_be_copied_out(machine: Machine, warm: WarmSandboxes | None) -> None:
    said = await sandboxed(
        f"cp {machine.openvaala_home}/openvaala.duckdb . 2>&1; ls -A {machine.openvaala_home}",
        context_for(machine.workspace, warm=warm),
    )
    assert "No such file" in said and not (machine.workspace / "openvaala.duckdb").exists(), said


@needs_sandbox
async def test_deny_read_adds_paths(machine: Machine, warm: WarmSandboxes | None) -> None:
    (machine.workspace / ".env").write_text("DATABASE_PASSWORD=hunter2\n")
    (machine.home / "private").mkdir()
    (machine.home / "private" / "diary.txt").write_text("dear diary\n")
    agent = Sandbox(deny_read=[".env", "~/private"])
    said = await sandboxed("cat .env ~/private/diary.txt; echo end", context_for(machine.workspace, agent, warm=warm))
    assert "hunter2" not in said and "dear diary" not in said and "end" in said, said
    assert "hunter2" in await sandboxed("cat .env", context_for(machine.workspace, warm=warm))  # only when denied


ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nowhere",
    "LANG": "C.UTF-8",
    "FAKE_API_KEY": API_KEY,
    "GITHUB_TOKEN": "ghp_not-a-real-token",
    "AWS_SECRET_ACCESS_KEY": "not-a-real-secret",
    "AWS_ACCESS_KEY_ID": "AKIANOTAREALKEY",
    "PGPASSWORD": "hunter2",
    "MYSQL_PWD": "hunter3",
    "SSH_AUTH_SOCK": "/run/user/1000/ssh-agent.sock",
    "DATABASE_URL": "postgres://me:hunter4@db.example/app",
    "NPM_CONFIG_REGISTRY": "https://registry.npmjs.org/",
    "DEPLOY_PRIVATE": SECRET_KEY,
    "MAKEFLAGS": "-j2",
}


def test_what_counts_as_a_secret() -> None:
    kept = tool_environment(ENVIRONMENT, model_keys=["FAKE_API_KEY"])
    assert kept == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nowhere",
        "LANG": "C.UTF-8",
        "NPM_CONFIG_REGISTRY": "https://registry.npmjs.org/",
        "MAKEFLAGS": "-j2",
    }
    assert not is_secret("PWD", "/home/me") and not is_secret("OLDPWD", "/") and is_secret("APIKEY", "x")
    allowed = tool_environment(ENVIRONMENT, allow=["GITHUB_*", "FAKE_API_KEY"], model_keys=["FAKE_API_KEY"])
    assert allowed["GITHUB_TOKEN"] == "ghp_not-a-real-token" and "FAKE_API_KEY" not in allowed


@needs_sandbox
async def test_env_in_a_turn_shows_no_secret(machine: Machine, provider: FakeProviderServer) -> None:
    """The finding as it was found: the model asks for `env`, and what it gets back is stored in the
    history: no key may be in it."""
    call = ChatStream().tool_call("c1", "shell", ['{"command": "env; cat ~/.ssh/id_rsa"}']).finish().response()
    provider.enqueue("openai-chat", call, ChatStream().text("done").finish().response())
    secrets = {"GITHUB_TOKEN": "ghp_not-a-real-token", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret"}
    (machine.openvaala_home / "openvaala.duckdb").unlink()  # the fixture's stand-in: a real one now
    lsp = await Harness.start(machine.openvaala_home, [machine.workspace], env={"FAKE_API_KEY": API_KEY, **secrets})
    try:
        await lsp.call("setDefinitions", definitions(provider))
        session = await Session.open(lsp)
        await session.submit("show me the environment")
        assert (await session.turn_completed())["status"] == "completed"
        said = next(text_of(i) for i in await session.items() if i["type"] == "toolResult")
        assert f"HOME={os.environ['HOME']}" in said  # the environment is there, without its secrets
        for secret in (API_KEY, *secrets.values(), "PRIVATE KEY"):
            assert secret not in said, said
        stored = await lsp.call("query", {"sql": "SELECT string_agg(payload::VARCHAR, ' ') FROM items"})
        assert API_KEY not in str(stored) and "ghp_" not in str(stored)
    finally:
        await lsp.stop()


CREDENTIALS = [
    ".ssh/id_rsa",
    ".aws/credentials",
    ".gnupg/private-keys-v1.d/key",
    ".config/gcloud/credentials.db",
    ".azure/accessTokens.json",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
]
DENIED = [".env", "private/notes.txt"]  # the agent's denyRead: `.env` (in the workspace) and `~/private`


def secret(path: str) -> str:
    return f"fake-secret-of-{path.replace('/', '-')}"


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home, which is the workspace, with every credential file in it and openvaala's own
    files (configuration, history database) under it."""
    path = tmp_path / "user"
    for name in [*CREDENTIALS, *DENIED]:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(f"{secret(name)}\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("fake = 'but harmless'\n")
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.setenv("OPENVAALA_HOME", str(path / ".local" / "openvaala"))
    (path / ".local" / "openvaala").mkdir(parents=True)
    return path


@pytest.fixture
async def editor(user: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await Harness.start(user / ".local" / "openvaala", [user], env={"FAKE_API_KEY": API_KEY})
    agent = {"name": "default", "sandbox": {"mode": "workspace-write", "denyRead": [".env", "~/private"]}}
    skills = [
        {"name": "aws", "description": "cloud", "path": str(user / ".aws" / "credentials")},
        {"name": "history", "description": "the past", "path": str(user / ".local/openvaala/openvaala.duckdb")},
    ]
    await harness.call("setDefinitions", {**definitions(provider), "agents": [agent], "skills": skills})
    yield harness
    await harness.stop()


def calls(*made: tuple[str, dict[str, Any]]) -> Any:
    listed = [(f"c{index}", tool, [json.dumps(args)]) for index, (tool, args) in enumerate(made)]
    return ChatStream().parallel_tool_calls(listed).finish().response()


def say(text: str) -> Any:
    return ChatStream().text(text).finish().response()


async def run(editor: Harness, provider: FakeProviderServer, *made: tuple[str, dict[str, Any]]) -> list[str]:
    """The results of the calls, once the turn ended; none may hold a secret, nor may what the model
    was sent or what the history keeps."""
    provider.enqueue("openai-chat", calls(*made), say("done"))
    session = await Session.open(editor)
    await session.submit("look around")
    assert (await session.turn_completed())["status"] == "completed"
    items = await session.items()
    sent = json.dumps([request.json for request in provider.requests_for("openai-chat")])
    assert "fake-secret" not in json.dumps(items) and "fake-secret" not in sent
    return [text_of(item) for item in items if item["type"] == "toolResult"]


async def test_the_file_tools_refuse_credentials_denied_paths_and_the_history(
    editor: Harness, provider: FakeProviderServer, user: Path
) -> None:
    reads = [("read_file", {"path": path}) for path in [*CREDENTIALS, *DENIED]]
    reads.append(("read_file", {"path": str(user / ".local/openvaala/openvaala.duckdb")}))
    results = await run(editor, provider, *reads)
    assert len(results) == len(reads) and all("protected" in result for result in results), results


async def test_the_file_tools_write_no_credential_file(
    editor: Harness, provider: FakeProviderServer, user: Path
) -> None:
    results = await run(
        editor,
        provider,
        ("write_file", {"path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA attacker\n"}),
        ("edit", {"path": ".aws/credentials", "old_string": "fake", "new_string": "real"}),
        ("write_file", {"path": ".local/openvaala/config.toml", "content": "[[hooks]]\n"}),
    )
    assert all("protected" in result for result in results), results
    assert not (user / ".ssh" / "authorized_keys").exists()
    assert (user / ".aws" / "credentials").read_text() == f"{secret('.aws/credentials')}\n"
    assert not (user / ".local" / "openvaala" / "config.toml").exists()


async def test_grep_and_glob_leave_protected_paths_out(editor: Harness, provider: FakeProviderServer) -> None:
    results = await run(
        editor,
        provider,
        ("grep", {"pattern": "fake", "output_mode": "content"}),
        ("glob", {"pattern": "**/*"}),
        ("glob", {"pattern": ".ssh/*"}),
        ("grep", {"pattern": "fake", "path": ".aws"}),
    )
    grep, glob, ssh, aws = results
    assert "src/app.py:1:fake = 'but harmless'" in grep  # the workspace's own file is found
    assert "src/app.py" in glob and ".ssh" not in glob and ".aws" not in glob and ".env" not in glob
    assert "id_rsa" not in ssh and "protected" in aws


async def test_the_skill_tool_reads_no_credential_file(editor: Harness, provider: FakeProviderServer) -> None:
    results = await run(editor, provider, ("skill", {"name": "aws"}), ("skill", {"name": "history"}))
    assert all("protected" in result for result in results), results
