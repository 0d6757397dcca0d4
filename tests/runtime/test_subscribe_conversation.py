"""subscribeConversation and unsubscribe: title changes, updates, closes on delete."""

from __future__ import annotations

import pytest
from harness import Harness, ResponseError


async def test_title_changes_reach_conversation_subscribers(client: Harness) -> None:
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


async def test_deleting_closes_its_subscriptions(client: Harness) -> None:
    conversation = await client.call("createConversation")
    subscribed = await client.call("subscribeConversation", {"conversationId": conversation["id"]})
    await client.call("deleteConversation", {"conversationId": conversation["id"]})
    closed = await client.wait_for(lambda m: m["method"] == "openvaala/subscriptionClosed")
    assert closed["params"]["subscriptionId"] == subscribed["subscriptionId"]
    assert closed["params"]["reason"]["kind"] == "conversationNotFound"
