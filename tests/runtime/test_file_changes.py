"""A turn whose model edits and writes files: each toolResult item carries `fileChanges` (in its
itemCompleted event, in listItems, after a restart), the model reads the tool's text without the
diffs, a refused write reports no change, and SQL on the history has the rows and the lines."""

from __future__ import annotations

from pathlib import Path

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import API_KEY, USAGE, Session, definitions, query, text_of


def script(provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .tool_call("call_1", "edit", ['{"path": "app.py", "old_string": "return 1", "new_string": "return 2"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream()
        .tool_call("call_2", "write_file", ['{"path": "docs/notes.md", "content": "# Notes\\n\\nTwo.\\n"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream()
        .tool_call("call_3", "write_file", ['{"path": "../outside.txt", "content": "escaped"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream().text("Done.").finish(usage=USAGE).response(),
    )


async def test_edits_and_writes_carry_their_file_changes(
    agent: Harness, provider: FakeProviderServer, workspace: Path, home: Path
) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n\n\nprint(f())\n")
    script(provider)
    session = await Session.open(agent)
    await session.submit("change f and write notes")
    assert (await session.turn_completed())["status"] == "completed"
    root = workspace.resolve()
    edited = {
        "path": str(root / "app.py"),
        "kind": "update",
        "diff": "@@ -1,5 +1,5 @@\n def f():\n-    return 1\n+    return 2\n \n \n print(f())\n",
        "additions": 1,
        "deletions": 1,
    }
    written = {
        "path": str(root / "docs/notes.md"),
        "kind": "add",
        "diff": "@@ -0,0 +1,3 @@\n+# Notes\n+\n+Two.\n",
        "additions": 3,
        "deletions": 0,
    }
    results = [item for item in await session.items() if item["type"] == "toolResult"]
    assert [item["toolResult"].get("fileChanges") for item in results] == [[edited], [written], None]
    assert results[2]["toolResult"]["isError"] is True and "outside the workspace" in text_of(results[2])
    assert not (workspace.parent / "outside.txt").exists()
    completed = [
        e["item"] for e in session.events() if e["type"] == "itemCompleted" and e["item"]["type"] == "toolResult"
    ]
    assert [item["toolResult"].get("fileChanges") for item in completed] == [[edited], [written], None]

    # the model read the tools' texts as before, not the diffs
    tool_messages = [m for m in provider.requests_for("openai-chat")[-1].json["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3 and not any("@@" in message["content"] for message in tool_messages)
    assert tool_messages[1]["content"].startswith("Created ")

    rows = await query(
        agent,
        "SELECT tool, path, kind, additions, deletions, workspace, provider, model, turn_id"
        " FROM file_changes_v ORDER BY seq",
    )
    turn_id = results[0]["turnId"]
    assert rows["rows"] == [
        ["edit", str(root / "app.py"), "update", 1, 1, str(root), "fake", "fake-model", turn_id],
        ["write_file", str(root / "docs/notes.md"), "add", 3, 0, str(root), "fake", "fake-model", turn_id],
    ]
    daily = await query(agent, "SELECT workspace, model, files, changes, additions, deletions FROM lines_changed_daily")
    assert daily["rows"] == [[str(root), "fake-model", 2, 2, 4, 1]]

    # kept: a new runtime on the same home lists them the same
    await agent.stop()
    again = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    try:
        await again.call("setDefinitions", definitions(provider))
        page = await again.call("listItems", {"conversationId": session.id, "limit": 50})
        kept = [logged["item"] for logged in page["items"] if logged["item"]["type"] == "toolResult"]
        assert [item["toolResult"].get("fileChanges") for item in kept] == [[edited], [written], None]
    finally:
        await again.stop()
