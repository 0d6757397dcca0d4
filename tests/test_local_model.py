"""Smoke test with the embedded model: llama.cpp's server with Gemma 3 270M, started by the runtime."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from lsp_client import LspClient

from openvaala_lsp.definitions import embedded_model
from openvaala_lsp.protocol.converter import unstructure

if importlib.util.find_spec("llama_cpp") is None and not os.environ.get("OPENVAALA_REQUIRE_LOCAL_MODEL"):
    pytest.skip("the local-model extra is not installed", allow_module_level=True)


async def test_streamed_turn_with_the_embedded_model(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    await lsp.initialize([workspace])
    try:
        agent = {"name": "assistant", "instructions": "Answer briefly.", "tools": []}
        await lsp.call("setDefinitions", {"models": [unstructure(embedded_model())], "agents": [agent]})
        conversation = await lsp.call("createConversation", {"agentName": "assistant"})
        cid = conversation["id"]
        session = (await lsp.call("listSessions", {"conversationId": cid}))["items"][0]["id"]
        sub = (await lsp.call("subscribeSession", {"conversationId": cid, "sessionId": session}))["subscriptionId"]
        await lsp.call("submitInput", {"conversationId": cid, "content": [{"type": "text", "text": "Say hello."}]})
        done = await lsp.wait_for(
            lambda m: (
                m["method"] == "openvaala/sessionEvent"
                and any(e["type"] == "turnCompleted" for e in m["params"]["events"])
            ),
            timeout=180,
        )
        turn = next(e["turn"] for e in done["params"]["events"] if e["type"] == "turnCompleted")
        assert turn["status"] == "completed", turn
        events = [e for n in lsp.of("openvaala/sessionEvent", sub) for e in n["events"]]
        deltas = [e["delta"] for e in events if e["type"] == "itemDelta"]
        assert len(deltas) > 1  # streamed, token by token
        items = (await lsp.call("listItems", {"conversationId": cid}))["items"]
        answer = items[-1]["item"]
        assert answer["type"] == "assistantMessage" and answer["content"][0]["text"] == "".join(deltas)
        # llama.cpp reports no usage while streaming: the runtime estimates it and says so
        assert turn["usage"]["outputTokens"] > 0 and turn["usage"]["inputTokens"] > 0
        context = await lsp.call("getSessionContextUsage", {"conversationId": cid, "sessionId": session})
        assert context["lastRequest"]["model"] == {"provider": "local", "name": "gemma3-270m"}
        assert context["window"] == 4096
        assert [e["context"]["source"] for e in events if e["type"] == "contextUsageUpdated"] == ["estimated"]
    finally:
        await lsp.shutdown()


async def test_the_demo_prints_token_usage_with_the_runtime_host_up(home: Path, workspace: Path) -> None:
    demo = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "openvaala_lsp.user_cli",
        "demo",
        "--directory",
        str(workspace),
        "Say hello.",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1"},
    )
    out, err = await asyncio.wait_for(demo.communicate(), 180)
    assert demo.returncode == 0, err.decode()
    text = out.decode()
    assert "turn completed:" in text and "token usage by model and day (openvaala sql):" in text
    assert "│ local    │ gemma3-270m │      1 │" in text  # the usage table, read while the editor was open
