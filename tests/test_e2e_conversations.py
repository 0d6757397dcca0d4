"""Conversations, sessions, turns, items and conversation subscriptions through the real
openvaala-lsp process over stdio."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from lsp_client import LspClient, ResponseError


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
    assert result["serverInfo"]["name"] == "openvaala-lsp"


async def test_conversation_lifecycle(client: LspClient, workspace: Path) -> None:
    conversation = await client.call("createConversation")
    assert conversation["id"].startswith("conv_")
    assert conversation["archived"] is False and conversation["title"] == ""
    assert conversation["executorSettings"] == {"executorId": "local", "directory": str(workspace.resolve())}
    assert conversation["createdAt"].endswith("Z")

    assert await client.call("getConversation", {"conversationId": conversation["id"]}) == conversation
    assert await client.call("isConversationOpen", {"conversationId": conversation["id"]}) == {"open": True}

    sessions = await client.call("listSessions", {"conversationId": conversation["id"]})
    assert len(sessions["items"]) == 1 and "nextCursor" not in sessions
    session = sessions["items"][0]
    assert session["conversationId"] == conversation["id"] and session["agentName"] == conversation["agentName"]
    assert await client.call("getSessionById", {"sessionId": session["id"]}) == session
    details = await client.call("getSessionDetails", {"conversationId": conversation["id"], "sessionId": session["id"]})
    assert details["turnCount"] == 0 and details["itemCount"] == 0 and details["pendingInputs"] == []
    assert details["info"]["state"] == "idle"

    assert await client.call("listTurns", {"conversationId": conversation["id"]}) == {"items": []}
    assert await client.call("listItems", {"conversationId": conversation["id"], "order": "desc"}) == {"items": []}
    assert await client.call("isIdle") == {"idle": True}

    archived = await client.call("setConversationArchived", {"conversationId": conversation["id"], "archived": True})
    assert archived["archived"] is True and archived["updatedAt"] >= conversation["updatedAt"]

    sub = (workspace / "src").resolve()
    moved = await client.call(
        "setConversationExecutorSettings",
        {"conversationId": conversation["id"], "executorSettings": {"directory": "src"}},
    )
    assert moved["executorSettings"]["directory"] == str(sub)

    assert await client.call("deleteConversation", {"conversationId": conversation["id"]}) == {}
    with pytest.raises(ResponseError) as err:
        await client.call("getConversation", {"conversationId": conversation["id"]})
    assert (err.value.code, err.value.kind) == (-32010, "conversationNotFound")
    with pytest.raises(ResponseError) as err:
        await client.call("getSessionById", {"sessionId": session["id"]})
    assert err.value.kind == "sessionNotFound"


async def test_list_filters_pagination_and_search(client: LspClient) -> None:
    ids = []
    for title in ("Fix the parser", "Write docs", "100% coverage", "parser tests"):
        conversation = await client.call("createConversation")
        await client.call("setConversationTitle", {"conversationId": conversation["id"], "title": title})
        ids.append(conversation["id"])
    await client.call("setConversationArchived", {"conversationId": ids[1], "archived": True})

    everything = await client.call("listConversations", {"limit": 500})
    assert sorted(e["conversation"]["id"] for e in everything["items"]) == sorted(ids)
    assert all(entry["running"] is False for entry in everything["items"])

    found = await client.call("listConversations", {"query": "PARSER"})
    assert {e["conversation"]["title"] for e in found["items"]} == {"Fix the parser", "parser tests"}
    percent = await client.call("listConversations", {"query": "100%"})
    assert [e["conversation"]["title"] for e in percent["items"]] == ["100% coverage"]

    archived = await client.call("listConversations", {"archived": True})
    assert [e["conversation"]["id"] for e in archived["items"]] == [ids[1]]
    active = await client.call("listConversations", {"archived": False})
    assert len(active["items"]) == 3

    seen: list[str] = []
    cursor = None
    while True:
        page = await client.call("listConversations", {"limit": 3, **({"cursor": cursor} if cursor else {})})
        seen += [e["conversation"]["id"] for e in page["items"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    ascending = await client.call("listConversations", {"order": "asc", "limit": 500})
    assert [e["conversation"]["id"] for e in ascending["items"]] == seen[::-1]


async def test_title_changes_reach_conversation_subscribers(client: LspClient) -> None:
    conversation = await client.call("createConversation")
    subscribed = await client.call("subscribeConversation", {"conversationId": conversation["id"]})
    assert subscribed["title"] == ""
    assert [info["state"] for info in subscribed["sessions"]] == ["idle"]
    sub_id = subscribed["subscriptionId"]

    await client.call("setConversationTitle", {"conversationId": conversation["id"], "title": "  First  "})
    await client.call("setConversationTitle", {"conversationId": conversation["id"], "title": "Second"})
    await client.call("setConversationArchived", {"conversationId": conversation["id"], "archived": True})
    await client.wait_for(lambda m: m["method"] == "openvaala/conversationEvent" and m["params"]["seq"] == 3)
    received = client.of("openvaala/conversationEvent", sub_id)
    assert [n["seq"] for n in received] == [1, 2, 3]
    assert received[0]["event"] == {"type": "titleChanged", "title": "First"}
    assert received[1]["event"] == {"type": "titleChanged", "title": "Second"}
    assert received[2]["event"]["type"] == "conversationUpdated"
    assert received[2]["event"]["conversation"]["archived"] is True

    assert await client.call("unsubscribe", {"subscriptionId": sub_id}) == {}
    closed = await client.wait_for(lambda m: m["method"] == "openvaala/subscriptionClosed")
    assert closed["params"] == {"subscriptionId": sub_id, "reason": {"kind": "unsubscribed", "message": "unsubscribed"}}
    await client.call("setConversationTitle", {"conversationId": conversation["id"], "title": "Third"})
    assert len(client.of("openvaala/conversationEvent", sub_id)) == 3
    with pytest.raises(ResponseError) as err:
        await client.call("unsubscribe", {"subscriptionId": sub_id})
    assert err.value.kind == "notFound"


async def test_deleting_closes_its_subscriptions(client: LspClient) -> None:
    conversation = await client.call("createConversation")
    subscribed = await client.call("subscribeConversation", {"conversationId": conversation["id"]})
    await client.call("deleteConversation", {"conversationId": conversation["id"]})
    closed = await client.wait_for(lambda m: m["method"] == "openvaala/subscriptionClosed")
    assert closed["params"]["subscriptionId"] == subscribed["subscriptionId"]
    assert closed["params"]["reason"]["kind"] == "conversationNotFound"


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
