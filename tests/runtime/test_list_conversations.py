"""listConversations: filters, search, pages and order."""

from __future__ import annotations

from harness import Harness


async def test_list_filters_pagination_and_search(client: Harness) -> None:
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
