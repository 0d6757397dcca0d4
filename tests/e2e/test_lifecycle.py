"""Conversations, sessions, turns, items and conversation subscriptions through the real
openvaala-lsp process over stdio."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from lsp_client import LspClient, ResponseError

from openvaala_lsp.tools import sandbox


async def test_initialize_advertises_the_protocol(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    result = await lsp.initialize([workspace])
    await lsp.shutdown()
    openvaala = result["capabilities"]["experimental"]["openvaala"]
    assert openvaala["protocolVersion"] == "0.3"
    assert openvaala["serverVersion"]
    for method in ("createConversation", "listConversations", "listItems", "subscribeConversation", "isIdle"):
        assert "openvaala/" + method in openvaala["methods"]
    assert "openvaala/subscriptionClosed" in openvaala["notifications"]
    assert "openvaala/answerApproval" in openvaala["methods"]
    probed = sandbox.state()
    assert openvaala["sandbox"] == {"usable": probed.usable, "reason": probed.reason}
    assert result["serverInfo"]["name"] == "openvaala-lsp"


async def test_kill_9_after_create_keeps_the_conversation(home: Path, workspace: Path) -> None:
    # the runtime itself is killed and restarted: --standalone runs it in the spawned process
    first = await LspClient.spawn(home, cwd=workspace, args=["--standalone"])
    await first.initialize([workspace])
    created = await first.call("createConversation")
    await first.call("setConversationTitle", {"conversationId": created["id"], "title": "survives"})
    os.kill(first.process.pid, signal.SIGKILL)
    await first.close()

    second = await LspClient.spawn(home, cwd=workspace, args=["--standalone"])
    await second.initialize([workspace])
    try:
        again = await second.call("getConversation", {"conversationId": created["id"]})
        assert again["id"] == created["id"] and again["title"] == "survives"
        # a restarted runtime holds nothing open
        assert await second.call("isConversationOpen", {"conversationId": created["id"]}) == {"open": False}
        assert (await second.call("openConversation", {"conversationId": created["id"]}))["id"] == created["id"]
        assert await second.call("isConversationOpen", {"conversationId": created["id"]}) == {"open": True}
        listed = await second.call("listSessions", {"conversationId": created["id"]})
        assert len(listed["items"]) == 1
    finally:
        await second.shutdown()


async def test_exit_codes_and_requests_after_shutdown(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, args=["--standalone"])
    await lsp.initialize([workspace])
    assert await lsp.request("shutdown") is None
    with pytest.raises(ResponseError) as err:
        await lsp.call("isIdle")
    assert (err.value.code, err.value.kind) == (-32014, "runtimeStopped")
    await lsp.notify("exit")
    assert await asyncio.wait_for(lsp.process.wait(), 15) == 0

    abrupt = await LspClient.spawn(home, cwd=workspace, args=["--standalone"])
    await abrupt.initialize([workspace])
    await abrupt.notify("exit")
    assert await asyncio.wait_for(abrupt.process.wait(), 15) == 1
