"""A conversation's record through its life: create, get, open state, sessions, details, archive,
executor settings, delete."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import Harness, ResponseError


async def test_conversation_lifecycle(client: Harness, workspace: Path) -> None:
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
