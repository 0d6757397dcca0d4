"""Checkpoints in turns: a shell command's changes to files (add, update, delete, move, binary) are
its toolResult's `fileChanges`, seen by comparing the workspace before and after it; what
`.gitignore` leaves out is not reported; `turnDiffUpdated` tells the turn's changes so far; a turn
that only reads takes no checkpoint; and with no git on PATH the turn runs as before, unreported."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import USAGE, Session

from openvaala_lsp.checkpoints import git


def shell(provider: FakeProviderServer, *commands: str, answer: str = "Done.") -> None:
    responses = [
        ChatStream().tool_call(f"call_{n}", "shell", [json.dumps({"command": c})]).finish(usage=USAGE).response()
        for n, c in enumerate(commands, 1)
    ]
    provider.enqueue("openai-chat", *responses, ChatStream().text(answer).finish(usage=USAGE).response())


def changes_of(item: dict[str, Any], root: Path) -> dict[str, dict[str, Any]]:
    return {os.path.relpath(change["path"], root): change for change in item["toolResult"].get("fileChanges") or []}


async def tool_results(session: Session) -> list[dict[str, Any]]:
    return [item for item in await session.items() if item["type"] == "toolResult"]


async def test_a_shell_commands_changes_are_its_file_changes(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    root = workspace.resolve()
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "old.md").write_text("# moving\n\nsome text\nthat stays\n")
    (workspace / ".gitignore").write_text("*.log\n")
    shell(
        provider,
        "sed -i 's/two/2/' a.txt && printf 'new\\n' > src/new.py && rm gone.txt && mv old.md docs.md"
        " && printf '\\000\\001' > blob.bin && echo noise > build.log",
        "cat a.txt",  # reads only: changes nothing
    )
    session = await Session.open(agent)
    await session.submit("change things")
    assert (await session.turn_completed())["status"] == "completed"
    first, second = await tool_results(session)
    changes = changes_of(first, root)
    assert set(changes) == {"a.txt", "src/new.py", "gone.txt", "docs.md", "blob.bin"}  # build.log: ignored
    assert changes["a.txt"]["kind"] == "update" and changes["a.txt"]["diff"] == (
        "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    )
    assert (changes["a.txt"]["additions"], changes["a.txt"]["deletions"]) == (1, 1)
    assert changes["src/new.py"] == {
        "path": str(root / "src/new.py"),
        "kind": "add",
        "diff": "@@ -0,0 +1 @@\n+new\n",
        "additions": 1,
        "deletions": 0,
    }
    assert changes["gone.txt"]["kind"] == "delete"
    assert changes["docs.md"]["kind"] == "move" and changes["docs.md"]["movedFrom"] == str(root / "old.md")
    assert changes["blob.bin"]["binary"] is True and "diff" not in changes["blob.bin"]
    assert "fileChanges" not in second["toolResult"]
    updates = [e for e in session.events() if e["type"] == "turnDiffUpdated"]
    assert len(updates) == 1 and updates[0]["turnId"] == first["turnId"]
    assert {os.path.relpath(f["path"], root): f["kind"] for f in updates[0]["files"]} == {
        path: change["kind"] for path, change in changes.items()
    }


async def test_no_git_no_checkpoints_the_turn_runs_as_before(
    agent: Harness, provider: FakeProviderServer, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent.runtime.state.checkpoints, "_state", git.probe(path=str(tmp_path)))
    shell(provider, "printf 'x\\n' > made.txt")
    session = await Session.open(agent)
    await session.submit("make a file")
    assert (await session.turn_completed())["status"] == "completed"
    [result] = await tool_results(session)
    assert (workspace / "made.txt").read_text() == "x\n"
    assert "fileChanges" not in result["toolResult"]
    assert not [e for e in session.events() if e["type"] == "turnDiffUpdated"]
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": result["turnId"]})
    assert diff == {"turnId": result["turnId"], "files": [], "complete": False}
    with pytest.raises(ResponseError) as refused:
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": result["turnId"]})
    assert refused.value.kind == "invalidState" and "git is not installed" in refused.value.message
    # the history alone can still be rewound
    rewound = await agent.call(
        "revertTurn", {"conversationId": session.id, "turnId": result["turnId"], "files": False, "history": True}
    )
    assert rewound["revertedTurnIds"] == [result["turnId"]] and rewound["files"] == []


async def test_an_interrupted_commands_changes_are_in_the_turns_diff(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    shell(provider, "printf 'half\\n' > half.txt && sleep 60")
    session = await Session.open(agent)
    await session.submit("start something long")
    await session.wait_event(lambda e: e["type"] == "itemStarted" and e["item"]["type"] == "toolResult")
    while not (workspace / "half.txt").exists():
        await asyncio.sleep(0.01)
    await agent.call("interruptTurn", {"conversationId": session.id})
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    # the turn's last checkpoint is taken as it ends
    while True:
        diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": turn["id"]})
        if diff["files"]:
            break
        await asyncio.sleep(0.01)
    assert [(f["path"], f["kind"]) for f in diff["files"]] == [(str(workspace.resolve() / "half.txt"), "add")]
