"""The MCP client against real servers built with the official `mcp` package: stdio and streamable
HTTP, status, tool calls, environment, tool-list changes, timeouts, failures, lazy start, stopping."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from processes import alive

from openvaala_lsp.definitions import MCPServerDefinition
from openvaala_lsp.mcp.connection import MCPServerConnection
from openvaala_lsp.mcp.manager import MCPManager
from openvaala_lsp.tools.base import ToolContext

pytest.importorskip("mcp")

SERVER = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
BOUND = 30.0
"""Outer bound on any single wait, so a broken test fails instead of hanging (never asserted on)."""


def stdio(name: str = "echo", *extra: str, env: dict[str, str] | None = None) -> MCPServerDefinition:
    return MCPServerDefinition(name=name, transport="stdio", command=sys.executable, args=[SERVER, *extra], env=env)


async def gone(pid: int) -> bool:
    for _ in range(int(BOUND / 0.05)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def has_extra(connection: MCPServerConnection) -> bool:
    return any(tool.name == "extra" for tool in connection.tools)


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    """The conversation's environment: deliberately not the host's."""
    return {
        "PATH": os.environ["PATH"],
        "FROM_CONVERSATION": "conversation value",
        "ECHO_SERVER_PID_FILE": str(tmp_path / "server.pid"),
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@contextlib.asynccontextmanager
async def connected(definition: MCPServerDefinition, **options: object) -> AsyncIterator[MCPServerConnection]:
    connection = MCPServerConnection(definition, **options)  # type: ignore[arg-type]
    try:
        yield connection
    finally:
        await asyncio.wait_for(connection.close(), BOUND)


async def test_stdio_server_lifecycle(environment: dict[str, str], workdir: Path, tmp_path: Path) -> None:
    definition = stdio(env={"FROM_DEFINITION": "definition value", "FROM_CONVERSATION": "overridden"})
    async with connected(definition, environment=environment, cwd=str(workdir)) as connection:
        assert (connection.status, connection.started) == ("starting", False)
        connection.start()
        assert (connection.status, connection.started) == ("starting", True)
        assert await connection.wait_ready(BOUND), connection.error
        assert connection.status == "ready" and connection.error is None
        assert {"echo", "add", "slow", "env", "register_more"} <= {tool.name for tool in connection.tools}
        echo = next(tool for tool in connection.tools if tool.name == "echo")
        assert echo.input_schema is not None and echo.input_schema["required"] == ["text"]

        assert (await connection.call_tool("echo", {"text": "hello"})).text == "hello"
        assert (await connection.call_tool("add", {"a": 2, "b": 40})).text == "42"
        assert (await connection.call_tool("env", {"name": "FROM_DEFINITION"})).text == "definition value"
        assert (await connection.call_tool("env", {"name": "FROM_CONVERSATION"})).text == "overridden"
        assert (await connection.call_tool("env", {"name": "ECHO_SERVER_PID_FILE"})).text == str(
            tmp_path / "server.pid"
        )
        assert (await connection.call_tool("cwd", {})).text == str(workdir)
        pid = int((tmp_path / "server.pid").read_text())
        assert alive(pid)
    assert not alive(pid)
    assert connection.status != "ready"


async def test_conversation_environment_reaches_the_server(environment: dict[str, str], workdir: Path) -> None:
    async with connected(stdio(), environment=environment, cwd=str(workdir)) as connection:
        connection.start()
        assert await connection.wait_ready(BOUND), connection.error
        assert (await connection.call_tool("env", {"name": "FROM_CONVERSATION"})).text == "conversation value"


async def test_results_and_errors(environment: dict[str, str], workdir: Path) -> None:
    async with connected(stdio(), environment=environment, cwd=str(workdir)) as connection:
        connection.start()
        assert await connection.wait_ready(BOUND), connection.error

        picture = await connection.call_tool("picture", {})
        assert not picture.is_error
        assert (
            picture.text == "a red dot\n[image: image/png, 8 bytes]\n[resource: file:///notes.txt, text/plain]\nhello"
        )

        failed = await connection.call_tool("fail", {"message": "boom"})
        assert failed.is_error and "boom" in failed.text

        unknown = await connection.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in unknown.text

        bad_arguments = await connection.call_tool("add", {"a": "not a number"})
        assert bad_arguments.is_error


async def test_timeout_is_an_error_and_the_server_keeps_working(environment: dict[str, str], workdir: Path) -> None:
    async with connected(stdio(), environment=environment, cwd=str(workdir)) as connection:
        connection.start()
        assert await connection.wait_ready(BOUND), connection.error
        output = await asyncio.wait_for(connection.call_tool("slow", {"seconds": 600}, timeout=0.5), BOUND)
        assert output.is_error
        assert "timed out" in output.text and "'slow'" in output.text and "'echo'" in output.text
        assert connection.status == "ready"
        assert (await connection.call_tool("echo", {"text": "still here"})).text == "still here"


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_tool_list_changes_are_followed(mode: str, era: str, environment: dict[str, str], workdir: Path) -> None:
    """Both eras: the 2026 one reports changes only on a listen stream, the handshake one pushes
    notifications/tools/list_changed."""
    seen = asyncio.Event()

    def changed(connection: MCPServerConnection) -> None:
        if has_extra(connection):
            seen.set()

    async with connected(
        stdio(), environment=environment, cwd=str(workdir), mode=mode, on_tools_changed=changed
    ) as connection:
        connection.start()
        assert await connection.wait_ready(BOUND), connection.error
        assert connection.protocol_version == era
        assert "extra" not in {tool.name for tool in connection.tools}
        assert (await connection.call_tool("register_more", {})).text == "registered extra"
        await asyncio.wait_for(seen.wait(), BOUND)
        assert "extra" in {tool.name for tool in connection.tools}
        assert (await connection.call_tool("extra", {"word": "more"})).text == "extra more"


async def test_server_exiting_later_fails(environment: dict[str, str], workdir: Path) -> None:
    seen: list[int] = []
    async with connected(
        stdio(), environment=environment, cwd=str(workdir), on_tools_changed=lambda c: seen.append(len(c.tools))
    ) as connection:
        connection.start()
        assert await connection.wait_ready(BOUND), connection.error
        # stderr closing is not an exit
        assert (await connection.call_tool("close_stderr", {})).text == "stderr closed"
        assert (await connection.call_tool("echo", {"text": "alive"})).text == "alive"
        output = await asyncio.wait_for(connection.call_tool("quit", {}), BOUND)
        assert output.is_error
        for _ in range(int(BOUND / 0.05)):
            if connection.status == "failed":
                break
            await asyncio.sleep(0.05)
        assert connection.status == "failed"
        assert connection.error is not None and "exited" in connection.error
        assert connection.tools == [] and seen[-1] == 0


async def test_missing_command_fails_with_a_readable_error(workdir: Path) -> None:
    definition = MCPServerDefinition(name="ghost", transport="stdio", command="openvaala-no-such-mcp-server")
    async with connected(definition, environment={"PATH": os.environ["PATH"]}, cwd=str(workdir)) as connection:
        connection.start()
        assert not await connection.wait_ready(BOUND)
        assert connection.status == "failed"
        assert connection.error == "command not found: openvaala-no-such-mcp-server"
        assert connection.tools == []
        output = await connection.call_tool("anything", {})
        assert output.is_error and "ghost" in output.text


@pytest.mark.parametrize(
    ("definition", "error"),
    [
        (MCPServerDefinition(name="x", transport="stdio"), "a stdio server needs a command"),
        (MCPServerDefinition(name="x", transport="http"), "an http server needs a url"),
        (MCPServerDefinition(name="x", transport="carrier-pigeon"), "unknown transport 'carrier-pigeon'"),
    ],
)
async def test_unusable_definitions_fail(definition: MCPServerDefinition, error: str) -> None:
    async with connected(definition) as connection:
        connection.start()
        assert not await connection.wait_ready(BOUND)
        assert connection.status == "failed" and connection.error is not None
        assert connection.error.startswith(error)


async def test_server_exiting_during_startup_fails_with_its_stderr(environment: dict[str, str], workdir: Path) -> None:
    async with connected(stdio("crash", "--crash"), environment=environment, cwd=str(workdir)) as connection:
        connection.start()
        assert not await connection.wait_ready(BOUND)
        assert connection.status == "failed"
        assert connection.error is not None and "refusing to start (--crash)" in connection.error


async def test_http_connection_refused_fails(workdir: Path) -> None:
    definition = MCPServerDefinition(name="web", transport="http", url=f"http://127.0.0.1:{free_port()}/mcp")
    async with connected(definition) as connection:
        connection.start()
        assert not await connection.wait_ready(BOUND)
        assert connection.status == "failed"
        assert connection.error is not None and definition.url is not None and definition.url in connection.error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def http_server(tmp_path: Path) -> AsyncIterator[str]:
    port = free_port()
    with open(tmp_path / "http-server.log", "wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, SERVER, "--http", str(port), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        for _ in range(int(BOUND / 0.05)):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        # uvicorn waits for open streams on SIGTERM; our client is closed by now, so this is short
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_streamable_http_server(tmp_path: Path) -> None:
    seen = asyncio.Event()
    async with http_server(tmp_path) as url:
        definition = MCPServerDefinition(name="web", transport="http", url=url, headers={"X-Test": "yes"})
        async with connected(definition, on_tools_changed=lambda c: seen.set() if has_extra(c) else None) as web:
            web.start()
            assert await web.wait_ready(BOUND), web.error
            assert "echo" in {tool.name for tool in web.tools}
            assert (await web.call_tool("echo", {"text": "over http"})).text == "over http"
            assert (await web.call_tool("register_more", {})).text == "registered extra"
            await asyncio.wait_for(seen.wait(), BOUND)
            assert "extra" in {tool.name for tool in web.tools}


async def test_ensure_started_does_not_wait_for_a_hanging_server(environment: dict[str, str], workdir: Path) -> None:
    manager = MCPManager(startup_timeout=1.0)
    manager.configure([stdio("stuck", "--hang")], environment=environment, cwd=str(workdir))
    try:
        await asyncio.wait_for(manager.ensure_started(wait=0.2), BOUND)
        [info] = manager.infos()
        assert info.status == "starting" and info.tools == []
        assert manager.tools() == []
        await asyncio.wait_for(manager.ensure_started(wait=0), BOUND)
        # past its startup timeout it is failed, not starting forever
        [connection] = manager.connections
        assert not await connection.wait_ready(BOUND)
        assert connection.status == "failed" and connection.error is not None
        assert "did not start within 1 s" in connection.error
        pid = int(Path(environment["ECHO_SERVER_PID_FILE"]).read_text())
    finally:
        await asyncio.wait_for(manager.close(), BOUND)
    assert await gone(pid)


async def test_manager(environment: dict[str, str], workdir: Path, tmp_path: Path) -> None:
    changes: list[str] = []
    manager = MCPManager(on_tools_changed=changes.append)
    ghost = MCPServerDefinition(name="ghost", transport="stdio", command="openvaala-no-such-mcp-server")
    manager.configure([stdio(), ghost], environment=environment, cwd=str(workdir))
    try:
        assert [(i.name, i.status) for i in manager.infos()] == [("echo", "starting"), ("ghost", "starting")]
        assert manager.tools() == []
        await asyncio.wait_for(manager.ensure_started(wait=BOUND), BOUND * 2)
        echo_info, ghost_info = manager.infos()
        assert echo_info.status == "ready" and echo_info.transport == "stdio"
        assert ghost_info.status == "failed" and ghost_info.error and ghost_info.tools == []
        assert changes == ["echo"]

        tools = {tool.name: tool for tool in manager.tools()}
        assert {"mcp__echo__echo", "mcp__echo__add", "mcp__echo__slow", "mcp__echo__env"} <= tools.keys()
        assert sorted(echo_info.tools) == sorted(tools)
        add = tools["mcp__echo__add"]
        assert add.parameters["type"] == "object" and set(add.parameters["properties"]) == {"a", "b"}
        assert add.description == "Adds two integers."
        context = ToolContext(directory=str(workdir), roots=[str(workdir)], environment=environment)
        assert (await add.run({"a": 1, "b": 2}, context)).text == "3"

        # a failed server can be retried
        failed = manager.connections[1]
        manager.restart("ghost")
        assert manager.connections[1] is not failed and manager.infos()[1].status == "starting"

        # the same definitions again: nothing restarts
        [first, _] = manager.connections
        first_pid = int(Path(environment["ECHO_SERVER_PID_FILE"]).read_text())
        manager.configure([stdio(), ghost], environment=environment, cwd=str(workdir))
        assert manager.connections[0] is first

        # a changed definition: the old process stops, the new one starts on next use
        changed_env = stdio(env={"FROM_DEFINITION": "second"})
        manager.configure([changed_env], environment=environment, cwd=str(workdir))
        assert await gone(first_pid)
        [second] = manager.connections
        assert second is not first and second.status == "starting" and not second.started
        await asyncio.wait_for(manager.ensure_started(wait=BOUND), BOUND * 2)
        assert (await second.call_tool("env", {"name": "FROM_DEFINITION"})).text == "second"
        second_pid = int(Path(environment["ECHO_SERVER_PID_FILE"]).read_text())
        assert second_pid != first_pid

        # removed: stopped
        manager.configure([], environment=environment, cwd=str(workdir))
        assert manager.infos() == [] and manager.tools() == []
        assert await gone(second_pid)
    finally:
        await asyncio.wait_for(manager.close(), BOUND)


def test_importing_the_package_does_not_load_the_sdk() -> None:
    code = "import sys, openvaala_lsp.mcp; print(sorted({'mcp', 'mcp_types', 'httpx2', 'anyio'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
