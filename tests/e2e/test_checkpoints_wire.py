"""Checkpoints over the wire: the real openvaala-lsp process (through its runtime host), a scripted
model server, real shell commands and real files. A two-turn conversation whose turn diffs and
revert are checked against the files on disk, a refused revert's `conflict` error as an editor
receives it, and `initialize` saying whether checkpoints can be made."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient, ResponseError
from turn_helpers import Session, start

from openvaala_lsp.checkpoints import git

pytestmark = pytest.mark.e2e


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


def shell_turn(provider: FakeProviderServer, command: str, answer: str) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("call_1", "shell", [json.dumps({"command": command})]).finish().response(),
        ChatStream().text(answer).finish().response(),
    )


def on_disk(workspace: Path) -> dict[str, str]:
    return {
        str(path.relative_to(workspace)): path.read_text()
        for path in sorted(workspace.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


def kinds(files: list[dict[str, Any]], root: Path) -> dict[str, str]:
    return {os.path.relpath(change["path"], root): change["kind"] for change in files}


async def test_two_turns_diffed_and_reverted_against_the_files_on_disk(
    agent: LspClient, provider: FakeProviderServer, workspace: Path
) -> None:
    root = workspace.resolve()
    (workspace / "main.c").write_text("int main(void) {\n    return 0;\n}\n")
    start_state = on_disk(workspace)
    shell_turn(provider, "sed -i 's/return 0/return 1/' main.c && printf 'all:\\n\\tcc main.c\\n' > Makefile", "built")
    session = await Session.open(agent)
    await session.submit("make it fail and add a Makefile")
    first = (await session.turn_completed(1))["id"]
    after_first = on_disk(workspace)
    shell_turn(provider, "mv Makefile build.mk && printf 'notes\\n' > src/NOTES", "moved")
    await session.submit("rename the Makefile")
    second = (await session.turn_completed(2))["id"]

    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": first})
    assert diff["complete"] is True and kinds(diff["files"], root) == {"main.c": "update", "Makefile": "add"}
    main = next(f for f in diff["files"] if f["path"].endswith("main.c"))
    assert main["diff"] == "@@ -1,3 +1,3 @@\n int main(void) {\n-    return 0;\n+    return 1;\n }\n"
    assert (main["additions"], main["deletions"]) == (1, 1)
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": second})
    assert kinds(diff["files"], root) == {"build.mk": "move", "src/NOTES": "add"}
    moved = next(f for f in diff["files"] if f["kind"] == "move")
    assert moved["movedFrom"] == str(root / "Makefile")
    updates = [e for e in session.events() if e["type"] == "turnDiffUpdated"]
    assert [u["turnId"] for u in updates] == [first, second]

    # the user edits a file the second turn made: the revert is refused, naming it with its diff
    (workspace / "src" / "NOTES").write_text("notes\nmine too\n")
    with pytest.raises(ResponseError) as refused:
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": second})
    assert (refused.value.code, refused.value.data["kind"]) == (-32022, "conflict")
    [conflict] = refused.value.data["files"]
    assert conflict["path"] == str(root / "src/NOTES") and conflict["diff"].endswith("+mine too\n")
    assert (workspace / "build.mk").exists()  # nothing was reverted

    (workspace / "src" / "NOTES").write_text("notes\n")  # the user takes the edit back
    reverted = await agent.call("revertTurn", {"conversationId": session.id, "turnId": second})
    assert reverted["revertedTurnIds"] == [second]
    assert on_disk(workspace) == after_first
    reverted = await agent.call("revertTurn", {"conversationId": session.id, "turnId": first})
    assert reverted["revertedTurnIds"] == [first]
    assert on_disk(workspace) == start_state
    # and a redo brings the first turn's files back
    await agent.call("revertTurn", {"conversationId": session.id, "turnId": reverted["revertedBy"]})
    assert on_disk(workspace) == after_first


async def test_initialize_says_whether_checkpoints_can_be_made(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    try:
        result = await lsp.initialize([workspace])
        openvaala = result["capabilities"]["experimental"]["openvaala"]
        probed = git.probe()
        assert openvaala["checkpoints"] == {"usable": probed.usable, "reason": probed.reason}
        assert {"openvaala/getTurnDiff", "openvaala/revertTurn"} <= set(openvaala["methods"])
    finally:
        await lsp.shutdown()
