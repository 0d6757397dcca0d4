"""MCP servers as tool sources (a real stdio MCP server), getMcpServers."""

from __future__ import annotations

import sys
from pathlib import Path

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import API_KEY, Session, text_of, write_user_config


async def test_mcp_servers_as_tool_sources(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    echo_server = Path(__file__).parent.parent / "mcp_servers" / "echo_server.py"
    write_user_config(
        home,
        provider,
        "\n[[mcpServers]]\n"
        'name = "echo"\ntransport = "stdio"\n'
        f'command = "{sys.executable}"\nargs = ["{echo_server}"]\n'
        "\n[[mcpServers]]\n"
        'name = "broken"\ntransport = "stdio"\ncommand = "/nonexistent/mcp-server"\n',
    )
    lsp = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    try:
        session = await Session.open(lsp)
        provider.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", "mcp__echo__echo", ['{"text": "ping from the model"}']).finish().response(),
            ChatStream().text("echoed").finish().response(),
        )
        await session.submit("use the echo tool")
        assert (await session.turn_completed())["status"] == "completed"
        result = next(i for i in await session.items() if i["type"] == "toolResult")
        assert text_of(result) == "ping from the model" and result["toolResult"]["isError"] is False
        offered = {tool["function"]["name"] for tool in provider.requests_for("openai-chat")[0].json["tools"]}
        assert "mcp__echo__echo" in offered and not any(name.startswith("mcp__broken") for name in offered)
        servers = {s["name"]: s for s in (await lsp.call("getMcpServers", {"conversationId": session.id}))["servers"]}
        assert servers["echo"]["status"] == "ready" and "mcp__echo__echo" in servers["echo"]["tools"]
        assert servers["broken"]["status"] == "failed" and servers["broken"]["error"]
    finally:
        await lsp.stop()
