"""Finding 1: the host's socket (and any other Unix socket of the machine) was reachable from inside
the sandbox, and a command that reached it widened its own rights through `setDefinitions`.

A Unix socket needs no write access to be connected to, so a read-only view is no defence: the
runtime's folders and the session's runtime directory are hidden, and every other socket outside the
workspace is masked unless the agent's sandbox lists it (`allowUnixSockets`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient
from sandbox_helpers import Machine, context_for, listening, machine, needs_sandbox, sandboxed
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.definitions import Sandbox
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

pytestmark = needs_sandbox
__all__ = ["machine"]


def connect(path: Path | str) -> str:
    return (
        'python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX)\n'
        f"try: s.connect('{path}'); print('CONNECTED')\n"
        "except OSError as e: print('refused:', e)\""
    )


async def run_twice(command: str, context_warm: tuple[Path, WarmSandboxes | None], **kwargs: object) -> str:
    """The command's output in the sandbox; with warm sandboxes, once more when one is warm."""
    workspace, warm = context_warm
    context = context_for(workspace, warm=warm, **kwargs)  # type: ignore[arg-type]
    first = await sandboxed(command, context)
    if warm is None:
        return first
    for _ in range(100):  # until the warm sandbox runs it (the first runs in a sandbox of its own)
        second = await sandboxed(f"echo $PPID; {command}", context)
        if not second.startswith("1\n"):
            assert second.split("\n", 1)[1] == first, (first, second)
            return first
    raise AssertionError("no warm sandbox")


async def test_the_host_socket_and_the_runtime_folders_are_out_of_reach(
    machine: Machine, warm: WarmSandboxes | None
) -> None:
    with listening(machine.host_socket):
        said = await run_twice(
            f"{connect(machine.host_socket)}; ls -A {machine.openvaala_home}", (machine.workspace, warm)
        )
    assert "CONNECTED" not in said and "refused:" in said
    assert "openvaala.duckdb" not in said and "config.toml" not in said and "run" not in said.split("\n")


async def test_the_session_runtime_directory_is_hidden(
    machine: Machine, warm: WarmSandboxes | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime_dir = machine.root / "xdg-runtime"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    with listening(runtime_dir / "openvaala" / "host.sock"), listening(runtime_dir / "gnupg" / "S.gpg-agent"):
        said = await run_twice(
            f"{connect(runtime_dir / 'openvaala' / 'host.sock')}; {connect(runtime_dir / 'gnupg' / 'S.gpg-agent')};"
            f" ls -A {runtime_dir}",
            (machine.workspace, warm),
        )
    assert "CONNECTED" not in said and said.count("refused:") == 2 and "openvaala" not in said.split("\n")


async def test_other_sockets_outside_the_workspace_only_when_allowed(
    machine: Machine, warm: WarmSandboxes | None
) -> None:
    elsewhere = machine.root / "services" / "docker.sock"
    inside = machine.workspace / "dev.sock"
    with listening(elsewhere), listening(inside):
        said = await run_twice(f"{connect(elsewhere)}; {connect(inside)}", (machine.workspace, warm))
        assert said.splitlines()[0].startswith("refused:") and said.splitlines()[1] == "CONNECTED"
        allowed = Sandbox(allow_unix_sockets=[str(elsewhere)])
        said = await run_twice(connect(elsewhere), (machine.workspace, warm), agent_sandbox=allowed)
        assert said.startswith("CONNECTED")


async def test_a_socket_that_appears_after_a_warm_sandbox_started_is_masked_too(machine: Machine) -> None:
    sandboxes = WarmSandboxes()
    try:
        context = context_for(machine.workspace, warm=sandboxes)
        for _ in range(100):
            if not (await sandboxed("echo $PPID", context)).startswith("1\n"):
                break
        late = machine.root / "late" / "agent.sock"
        with listening(late):
            said = await sandboxed(connect(late), context)
        assert said.startswith("refused:"), said
    finally:
        await sandboxes.close()


async def test_a_command_cannot_reach_the_host_of_a_real_editor_session(
    machine: Machine, provider: FakeProviderServer
) -> None:
    """The finding as it was found: an agent's command, run by the runtime host an editor started,
    connects to that host's socket and sets definitions that let it out. Now it finds no socket, and
    the host's definitions stay as the editor set them."""
    workspace, home = machine.workspace, machine.root / "editor-home"
    home.mkdir()
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    try:
        await lsp.initialize([workspace], options={"eventBatchMs": 2})
        await lsp.call("setDefinitions", definitions(provider))
        kept = (home / "run" / "definitions.json").read_text()
        socket_path = home / "run" / "host.sock"
        assert socket_path.is_socket()
        attack = (
            "python3 -c \"import socket,json; s=socket.socket(socket.AF_UNIX); s.connect('" + str(socket_path) + "');"
            " s.sendall(json.dumps({'hello': 1}).encode()+b'\\n'); print('CONNECTED', s.recv(100))\"; echo end"
        )
        call = ChatStream().tool_call("c1", "shell", [json.dumps({"command": attack})]).finish().response()
        provider.enqueue("openai-chat", call, ChatStream().text("done").finish().response())
        session = await Session.open(lsp)
        await session.submit("run it")
        assert (await session.turn_completed())["status"] == "completed"
        said = next(text_of(i) for i in await session.items() if i["type"] == "toolResult")
        assert "CONNECTED" not in said and ("No such file" in said or "refused" in said), said
        assert (home / "run" / "definitions.json").read_text() == kept
    finally:
        await lsp.shutdown()
