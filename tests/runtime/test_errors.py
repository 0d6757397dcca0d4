"""Bad params and unknown ids: every method answers with the right error kind, naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Harness, ResponseError

UNKNOWN_CONVERSATION = "conv_000000000000deadbeef"
UNKNOWN_SESSION = "sess_000000000000deadbeef"

# method -> params naming an unknown conversation; every one must answer conversationNotFound
CONVERSATION_METHODS: dict[str, dict[str, Any]] = {
    "openConversation": {},
    "getConversation": {},
    "isConversationOpen": {},
    "deleteConversation": {},
    "setConversationArchived": {"archived": True},
    "setConversationTitle": {"title": "x"},
    "setConversationExecutorSettings": {"executorSettings": {}},
    "listSessions": {},
    "listTurns": {},
    "getTurns": {"turnIds": ["turn_1"]},
    "listItems": {},
    "getSessionDetails": {"sessionId": UNKNOWN_SESSION},
    "subscribeConversation": {},
}

# method -> (params, wire path the error must name)
MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "getConversation": ({}, "$.conversationId"),
    "openConversation": ({"conversationId": 7}, "$.conversationId"),
    "createConversation": ({"environment": "PATH=/bin"}, "$.environment"),
    "listConversations": ({"limit": 0}, "$.limit"),
    "setConversationArchived": ({"conversationId": "c", "archived": "yes"}, "$.archived"),
    "setConversationTitle": ({"conversationId": "c"}, "$.title"),
    "setConversationExecutorSettings": ({"conversationId": "c", "executorSettings": []}, "$.executorSettings"),
    "listItems": ({"conversationId": "c", "order": "sideways"}, "$.order"),
    "listTurns": ({"conversationId": "c", "cursor": 5}, "$.cursor"),
    "getTurns": ({"conversationId": "c", "turnIds": "turn_1"}, "$.turnIds"),
    "listSessions": ({"conversationId": "c", "limit": 501}, "$.limit"),
    "getSessionById": ({}, "$.sessionId"),
    "getSessionSnapshot": ({"subscriptionId": "sub_1"}, "$.cursor"),
    "getSessionDetails": ({"conversationId": "c"}, "$.sessionId"),
    "subscribeConversation": ({"conversationId": None}, "$.conversationId"),
    "unsubscribe": ({}, "$.subscriptionId"),
    "resolveWorkspaceDirectory": ({}, "$.directory"),
    "getWorkspaceDirectories": ({"directory": 1}, "$.directory"),
    "openTerminalWorkspace": ({"environment": ["NOEQUALS"]}, "$.environment"),
    "deleteConversation": ({"conversationId": ["c"]}, "$.conversationId"),
}


@pytest.mark.parametrize("method", sorted(CONVERSATION_METHODS))
async def test_unknown_conversation(client: Harness, method: str) -> None:
    params = {"conversationId": UNKNOWN_CONVERSATION, **CONVERSATION_METHODS[method]}
    with pytest.raises(ResponseError) as err:
        await client.call(method, params)
    assert (err.value.code, err.value.kind) == (-32010, "conversationNotFound")
    assert UNKNOWN_CONVERSATION in err.value.message


@pytest.mark.parametrize("method", sorted(MALFORMED))
async def test_malformed_params_name_the_field(client: Harness, method: str) -> None:
    params, path = MALFORMED[method]
    with pytest.raises(ResponseError) as err:
        await client.call(method, params)
    assert err.value.code == -32602
    assert err.value.kind == "invalidParams"
    assert any(problem.endswith("@ " + path) for problem in err.value.data["errors"]), err.value.data
    assert path in err.value.message


async def test_session_and_id_errors(client: Harness) -> None:
    conversation = await client.call("createConversation")
    cid = conversation["id"]
    with pytest.raises(ResponseError) as err:
        await client.call("getSessionById", {"sessionId": UNKNOWN_SESSION})
    assert (err.value.code, err.value.kind) == (-32015, "sessionNotFound")
    for method, extra in (("listItems", {}), ("listTurns", {}), ("getSessionDetails", {})):
        with pytest.raises(ResponseError) as err:
            await client.call(method, {"conversationId": cid, "sessionId": UNKNOWN_SESSION, **extra})
        assert err.value.kind == "sessionNotFound", method
    with pytest.raises(ResponseError) as err:
        await client.call("getTurns", {"conversationId": cid, "turnIds": ["turn_missing"]})
    assert (err.value.code, err.value.kind) == (-32017, "notFound")
    with pytest.raises(ResponseError) as err:
        await client.call("createConversation", {"agentName": "no-such-agent"})
    assert err.value.kind == "notFound" and "no-such-agent" in err.value.message
    with pytest.raises(ResponseError) as err:
        await client.call("createConversation", {"executorSettings": {"executorId": "ssh-box"}})
    assert err.value.kind == "notFound" and "ssh-box" in err.value.message
    with pytest.raises(ResponseError) as err:
        await client.call("createConversation", {"model": {"model": {"provider": "x", "name": "y"}}})
    assert err.value.kind == "notFound"
    with pytest.raises(ResponseError) as err:
        await client.call("listConversations", {"cursor": "not-a-cursor"})
    assert err.value.kind == "invalidParams" and "$.cursor" in err.value.message
    with pytest.raises(ResponseError) as err:
        await client.call("listItems", {"conversationId": cid, "cursor": -1})
    assert err.value.kind == "invalidParams"
    with pytest.raises(ResponseError) as err:
        await client.call("setConversationTitle", {"conversationId": cid, "title": "x" * 1001})
    assert err.value.kind == "invalidParams" and "$.title" in err.value.message
