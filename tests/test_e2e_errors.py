"""Bad input over the wire: every request gets a response with the right code and `data.kind`, and
the server keeps serving afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_client import NULL, LspClient, ResponseError

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
    "getSessionDetails": ({"conversationId": "c"}, "$.sessionId"),
    "subscribeConversation": ({"conversationId": None}, "$.conversationId"),
    "unsubscribe": ({}, "$.subscriptionId"),
    "resolveWorkspaceDirectory": ({}, "$.directory"),
    "getWorkspaceDirectories": ({"directory": 1}, "$.directory"),
    "openTerminalWorkspace": ({"environment": ["NOEQUALS"]}, "$.environment"),
    "deleteConversation": ({"conversationId": ["c"]}, "$.conversationId"),
}


@pytest.mark.parametrize("method", sorted(CONVERSATION_METHODS))
async def test_unknown_conversation(client: LspClient, method: str) -> None:
    params = {"conversationId": UNKNOWN_CONVERSATION, **CONVERSATION_METHODS[method]}
    with pytest.raises(ResponseError) as err:
        await client.call(method, params)
    assert (err.value.code, err.value.kind) == (-32010, "conversationNotFound")
    assert UNKNOWN_CONVERSATION in err.value.message


@pytest.mark.parametrize("method", sorted(MALFORMED))
async def test_malformed_params_name_the_field(client: LspClient, method: str) -> None:
    params, path = MALFORMED[method]
    with pytest.raises(ResponseError) as err:
        await client.call(method, params)
    assert err.value.code == -32602
    assert err.value.kind == "invalidParams"
    assert any(problem.endswith("@ " + path) for problem in err.value.data["errors"]), err.value.data
    assert path in err.value.message


async def test_absent_or_null_params_mean_empty_params_for_every_method(home: Path, workspace: Path) -> None:
    """Absent and `null` params answer exactly as `{}` does (vscode-jsonrpc's `sendRequest(method)`
    and Neovim's `request(method, nil)` send no params); array params are invalidParams. No method
    hangs or crashes on any of them."""
    lsp = await LspClient.spawn(home, cwd=workspace)
    result = await lsp.initialize([workspace])

    async def outcome(method: str, params: Any) -> tuple[Any, ...]:
        try:
            await lsp.request(method, params)
        except ResponseError as exc:
            return exc.code, exc.kind
        return ("ok",)

    try:
        for method in result["capabilities"]["experimental"]["openvaala"]["methods"]:
            empty = await outcome(method, {})
            assert empty[0] in ("ok", -32602, -32010, -32015, -32017, -32019), (method, empty)
            assert await outcome(method, None) == empty, method  # no params member
            assert await outcome(method, NULL) == empty, method
            assert await outcome(method, []) == (-32602, "invalidParams"), method
        assert await lsp.call("isIdle") == {"idle": True}
        assert await lsp.request("openvaala/isIdle") == {"idle": True}
    finally:
        await lsp.shutdown()


async def test_session_and_id_errors(client: LspClient) -> None:
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


async def test_protocol_level_garbage(client: LspClient) -> None:
    with pytest.raises(ResponseError) as err:
        await client.request("openvaala/noSuchMethod", {})
    assert err.value.code == -32601
    await client.send_raw(b"{this is not json")
    await client.send_raw(b'{"jsonrpc": "2.0", "id": 99}')
    await client.send_raw(b"[1, 2, 3]")
    with pytest.raises(ResponseError) as err:
        await client.request("initialize", {"processId": "not a pid", "capabilities": []})
    assert err.value.code == -32602
    # still serving
    assert await client.call("isIdle") == {"idle": True}


async def test_requests_before_initialize(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    try:
        with pytest.raises(ResponseError) as err:
            await lsp.call("isIdle")
        assert err.value.code == -32002
        await lsp.initialize([workspace])
        assert await lsp.call("isIdle") == {"idle": True}
    finally:
        await lsp.shutdown()


async def test_ephemeral_is_refused_clearly(client: LspClient) -> None:
    with pytest.raises(ResponseError) as err:
        await client.call("createConversation", {"ephemeral": True})
    assert err.value.kind == "invalidParams" and "$.ephemeral" in err.value.message
