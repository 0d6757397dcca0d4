"""The agent loop end to end: the real openvaala-lsp process, a real HTTP model server on
127.0.0.1 (scripted), real tools, real DuckDB."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient, ResponseError
from turn_helpers import API_KEY, STANDALONE, Session, definitions, start, text_of


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


async def test_kill_9_mid_turn_then_restart(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("streaming...").pause(60).finish().response())
    # the runtime is killed: --standalone runs it in the spawned process
    first = await start(home, workspace, provider, STANDALONE)
    session = await Session.open(first)
    asked = await session.submit("question")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    queued = await session.submit("follow-up")
    os.kill(first.process.pid, signal.SIGKILL)
    await first.close()

    second = await start(home, workspace, provider, STANDALONE)
    try:
        turns = await second.call("listTurns", {"conversationId": session.id})
        assert [t["status"] for t in turns["items"]] == ["interrupted"]
        items = await second.call("listItems", {"conversationId": session.id})
        assert [i["item"]["id"] for i in items["items"]][:1] == [asked]
        reopened = await Session.open(second, session.id)
        assert [p["item"]["id"] for p in reopened.snapshot["pendingInputs"]] == [queued]
        assert reopened.snapshot["lastSavedOrdinal"] == len(items["items"])
        # the queued input runs with the next turn
        provider.set_default("openai-chat", ChatStream().text("answered").finish().response())
        await reopened.submit("and now?")
        assert (await reopened.turn_completed())["status"] == "completed"
        texts = [text_of(i) for i in await reopened.items()]
        assert texts[-3:] == ["follow-up", "and now?", "answered"]
    finally:
        await second.shutdown()


async def test_client_tools_run_in_the_editor(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    calls: list[dict[str, Any]] = []

    def call_client_tool(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(params)
        return {"content": [{"type": "text", "text": f"open files: {params['arguments']['glob']}"}]}

    lsp.handlers["openvaala/callClientTool"] = call_client_tool
    await lsp.initialize([workspace], options={"clientId": "editor-1"})
    try:
        await lsp.call("setDefinitions", definitions(provider))
        session = await Session.open(lsp)
        tools = [
            {
                "name": "open_files",
                "description": "files open in the editor",
                "inputSchema": {"type": "object", "properties": {"glob": {"type": "string"}}},
            }
        ]
        with pytest.raises(ResponseError) as err:
            await lsp.call(
                "setClientMcpServers",
                {
                    "conversationId": session.id,
                    "clientId": "someone-else",
                    "servers": [{"name": "editor", "tools": tools}],
                },
            )
        assert err.value.kind == "notFound" and "$.clientId" in err.value.message
        await lsp.call(
            "setClientMcpServers",
            {"conversationId": session.id, "clientId": "editor-1", "servers": [{"name": "editor", "tools": tools}]},
        )
        servers = await lsp.call("getMcpServers", {"conversationId": session.id})
        assert servers["servers"] == [
            {
                "name": "editor",
                "transport": "client",
                "status": "ready",
                "tools": ["open_files"],
                "clientId": "editor-1",
            }
        ]
        provider.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", "mcp__editor__open_files", ['{"glob": "*.py"}']).finish().response(),
            ChatStream().text("seen").finish().response(),
        )
        await session.submit("what is open?")
        assert (await session.turn_completed())["status"] == "completed"
        assert calls == [
            {
                "clientId": "editor-1",
                "conversationId": session.id,
                "server": "editor",
                "tool": "open_files",
                "arguments": {"glob": "*.py"},
            }
        ]
        result = next(i for i in await session.items() if i["type"] == "toolResult")
        assert text_of(result) == "open files: *.py" and result["toolResult"]["isError"] is False
        offered = provider.requests_for("openai-chat")[0].json["tools"]
        assert "mcp__editor__open_files" in {tool["function"]["name"] for tool in offered}
    finally:
        await lsp.shutdown()
