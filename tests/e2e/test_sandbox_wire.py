"""The shell's sandbox and approvals through the real openvaala-lsp (front and runtime host) with the
scripted model server: what a command may write and reach, and an approval answered by the editor."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from loopback import greeting_server
from lsp_client import LspClient
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.tools import sandbox

pytestmark = pytest.mark.skipif(not sandbox.state().usable, reason=f"no sandbox here: {sandbox.state().reason}")


def shell_call(command: str, **extra: Any) -> Any:
    return ChatStream().tool_call("c1", "shell", [json.dumps({"command": command, **extra})]).finish().response()


async def editor(home: Path, workspace: Path, provider: FakeProviderServer, **agent: Any) -> LspClient:
    """An editor that can answer approvals, with one agent configured as given."""
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    await lsp.initialize([workspace], options={"eventBatchMs": 2, "approvals": True, "clientName": "test editor"})
    await lsp.call("setDefinitions", definitions(provider) | {"agents": [{"name": "default", **agent}]})
    return lsp


async def run_command(lsp: LspClient, provider: FakeProviderServer, command: str, **extra: Any) -> str:
    """The shell tool's result for `command`, run by the model in a new conversation."""
    provider.enqueue("openai-chat", shell_call(command, **extra), ChatStream().text("done").finish().response())
    session = await Session.open(lsp)
    await session.submit("run it")
    assert (await session.turn_completed())["status"] == "completed"
    return next(text_of(i) for i in await session.items() if i["type"] == "toolResult")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace (and away from /tmp, which the sandbox replaces with its own)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-e2e-"))
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
async def sandboxed(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await editor(home, workspace, provider)  # the default sandbox: workspace-write, no network
    yield lsp
    await lsp.shutdown()


async def test_writes_outside_the_workspace_fail_and_inside_succeed(
    sandboxed: LspClient, provider: FakeProviderServer, workspace: Path, outside: Path
) -> None:
    escaped = await run_command(sandboxed, provider, f"echo pwned > {outside}/escaped.txt")
    assert "Read-only file system" in escaped and "[exit code 2]" in escaped
    assert not (outside / "escaped.txt").exists()
    written = await run_command(sandboxed, provider, "echo kept > kept.txt && cat kept.txt")
    assert written == "kept\n[exit code 0]"
    assert (workspace / "kept.txt").read_text() == "kept\n"


@pytest.fixture
def loopback() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets whoever connects."""
    with greeting_server(b"greetings from loopback\n") as port:
        yield port


def connect(port: int) -> str:
    return f"python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {port}), 5).recv(64))\""


async def test_the_network_only_with_network_true(
    home: Path, workspace: Path, provider: FakeProviderServer, loopback: int
) -> None:
    lsp = await editor(home, workspace, provider)
    try:
        blocked = await run_command(lsp, provider, connect(loopback))
        # the sandbox has a network of its own: its loopback is not the machine's
        assert "greetings" not in blocked and "ConnectionRefusedError" in blocked
        await lsp.call(
            "setDefinitions",
            definitions(provider)
            | {"agents": [{"name": "default", "sandbox": {"mode": "workspace-write", "network": True}}]},
        )
        reached = await run_command(lsp, provider, connect(loopback))
        assert "greetings from loopback" in reached
    finally:
        await lsp.shutdown()


async def test_an_approval_answered_by_the_editor(
    sandboxed: LspClient, provider: FakeProviderServer, outside: Path
) -> None:
    command = f"echo allowed > {outside}/outside.txt"
    provider.enqueue(
        "openai-chat",
        shell_call(command, outside_sandbox=True, justification="writes the release notes"),
        ChatStream().text("done").finish().response(),
    )
    session = await Session.open(sandboxed)
    await session.submit("write it")
    asked = await session.wait_event(lambda e: e["type"] == "approvalRequested")
    assert asked["approval"]["command"] == command
    assert asked["approval"]["reason"] == "runs outside the sandbox: writes the release notes"
    assert not (outside / "outside.txt").exists()  # nothing runs before the answer
    answer = {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
    assert await sandboxed.call("answerApproval", answer) == {}
    assert (await session.turn_completed())["status"] == "completed"
    resolved = next(e for e in session.events() if e["type"] == "approvalResolved")
    assert resolved["decision"] == "allowOnce" and resolved["by"]["name"] == "test editor"
    assert (outside / "outside.txt").read_text() == "allowed\n"
