"""getTurnDiff and revertTurn on real files: a turn's diff from its checkpoints (and while it runs),
reverting two turns' shell-made changes, a revert refused when the user changed a file since (the
files and their diffs named) and forced, a revert reverted (redo), the user's own edits elsewhere
left alone, a rewind that takes the turns out of the model's context, and a fork's files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import USAGE, Session, definitions


def shell_turn(provider: FakeProviderServer, command: str, answer: str) -> None:
    call = json.dumps({"command": command})
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("call_1", "shell", [call]).finish(usage=USAGE).response(),
        ChatStream().text(answer).finish(usage=USAGE).response(),
    )


def paths(files: list[dict[str, Any]], root: Path) -> dict[str, str]:
    return {os.path.relpath(change["path"], root): change["kind"] for change in files}


async def two_turns(agent: Harness, provider: FakeProviderServer, workspace: Path) -> tuple[Session, str, str]:
    (workspace / "app.py").write_text("x = 1\ny = 2\n")
    (workspace / "keep.txt").write_text("the user's\n")
    shell_turn(provider, "sed -i 's/x = 1/x = 10/' app.py && printf 'one\\n' > first.txt", "first done")
    session = await Session.open(agent)
    await session.submit("first")
    first = (await session.turn_completed(1))["id"]
    shell_turn(
        provider, "sed -i 's/y = 2/y = 20/' app.py && rm keep.txt && printf 'two\\n' > second.txt", "second done"
    )
    await session.submit("second")
    second = (await session.turn_completed(2))["id"]
    return session, first, second


async def test_turn_diffs_and_a_revert_of_both_turns(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    root = workspace.resolve()
    session, first, second = await two_turns(agent, provider, workspace)
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": first})
    assert diff["turnId"] == first and diff["complete"] is True
    assert paths(diff["files"], root) == {"app.py": "update", "first.txt": "add"}
    app = next(f for f in diff["files"] if f["path"].endswith("app.py"))
    assert app["diff"] == "@@ -1,2 +1,2 @@\n-x = 1\n+x = 10\n y = 2\n"
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": second})
    assert paths(diff["files"], root) == {"app.py": "update", "keep.txt": "delete", "second.txt": "add"}

    (workspace / "notes.md").write_text("the user's own, made since\n")  # not a file the turns touched
    reverted = await agent.call("revertTurn", {"conversationId": session.id, "turnId": first})
    assert reverted["revertedTurnIds"] == [first, second] and reverted["revertedBy"]
    assert paths(reverted["files"], root) == {
        "app.py": "update",
        "first.txt": "delete",
        "second.txt": "delete",
        "keep.txt": "add",
    }
    assert (workspace / "app.py").read_text() == "x = 1\ny = 2\n"
    assert (workspace / "keep.txt").read_text() == "the user's\n"
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert (workspace / "notes.md").read_text() == "the user's own, made since\n"
    # the revert is a turn of its own, with its own diff
    turns = (await agent.call("listTurns", {"conversationId": session.id}))["items"]
    assert reverted["revertedBy"] in {turn["id"] for turn in turns}
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": reverted["revertedBy"]})
    assert paths(diff["files"], root) == paths(reverted["files"], root)

    # reverting the revert redoes both turns
    redone = await agent.call("revertTurn", {"conversationId": session.id, "turnId": reverted["revertedBy"]})
    assert redone["revertedTurnIds"] == [reverted["revertedBy"]]
    assert (workspace / "app.py").read_text() == "x = 10\ny = 20\n"
    assert (workspace / "first.txt").read_text() == "one\n" and (workspace / "second.txt").read_text() == "two\n"
    assert not (workspace / "keep.txt").exists()
    assert (workspace / "notes.md").read_text() == "the user's own, made since\n"

    # and reverting only the second turn now undoes just it
    again = await agent.call("revertTurn", {"conversationId": session.id, "turnId": second})
    assert again["revertedTurnIds"] == [second]
    assert (workspace / "app.py").read_text() == "x = 10\ny = 2\n"
    assert (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()


async def test_a_revert_never_overwrites_the_users_later_edit_unless_forced(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    root = workspace.resolve()
    session, first, _ = await two_turns(agent, provider, workspace)
    (workspace / "app.py").write_text("x = 10\ny = 20\nz = 'the user typed this'\n")
    with pytest.raises(ResponseError) as refused:
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": first})
    error = refused.value
    assert (error.code, error.kind) == (-32022, "conflict") and "app.py" in error.message
    [conflict] = error.data["files"]
    assert conflict["path"] == str(root / "app.py") and conflict["kind"] == "update"
    assert conflict["diff"] == "@@ -1,2 +1,3 @@\n x = 10\n y = 20\n+z = 'the user typed this'\n"
    # nothing was touched
    assert (workspace / "app.py").read_text() == "x = 10\ny = 20\nz = 'the user typed this'\n"
    assert (workspace / "first.txt").exists() and (workspace / "second.txt").exists()

    forced = await agent.call("revertTurn", {"conversationId": session.id, "turnId": first, "force": True})
    assert forced["revertedTurnIds"] and (workspace / "app.py").read_text() == "x = 1\ny = 2\n"
    assert not (workspace / "first.txt").exists()


async def test_rewind_with_history_takes_the_turns_out_of_the_models_context(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, _, second = await two_turns(agent, provider, workspace)
    rewound = await agent.call("revertTurn", {"conversationId": session.id, "turnId": second, "history": True})
    assert rewound["revertedTurnIds"] == [second]
    [turn] = (await agent.call("getTurns", {"conversationId": session.id, "turnIds": [second]}))["turns"]
    assert turn["revertedBy"] == rewound["revertedBy"]
    assert (workspace / "keep.txt").exists() and (workspace / "app.py").read_text() == "x = 10\ny = 2\n"
    provider.enqueue("openai-chat", ChatStream().text("third").finish(usage=USAGE).response())
    await session.submit("third")
    await session.turn_completed(3)
    sent = json.dumps(provider.requests_for("openai-chat")[-1].json["messages"])
    assert "first done" in sent and "first" in sent
    assert "second done" not in sent and "keep.txt" not in sent  # the reverted turn's input, call and answer
    items = await session.items()
    assert any("second done" in json.dumps(item) for item in items)  # still in the log


async def test_bad_params_and_states_are_refused_naming_the_field(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, first, _ = await two_turns(agent, provider, workspace)
    cases = [
        ({"conversationId": session.id, "turnId": "turn_nope"}, "notFound", "$.turnId"),
        ({"conversationId": session.id, "turnId": first, "files": False, "history": False}, "invalidParams", "$.files"),
        ({"conversationId": session.id, "turnId": first, "force": "yes"}, "invalidParams", "force"),
        ({"conversationId": session.id}, "invalidParams", "turnId"),
    ]
    for params, kind, field in cases:
        with pytest.raises(ResponseError) as refused:
            await agent.call("revertTurn", params)
        assert refused.value.kind == kind and field in refused.value.message, refused.value.message
    with pytest.raises(ResponseError) as refused:
        await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": "turn_nope"})
    assert refused.value.kind == "notFound" and "$.turnId" in refused.value.message


async def test_a_fork_takes_the_files_at_its_cut(
    agent: Harness, provider: FakeProviderServer, workspace: Path, tmp_path: Path, home: Path
) -> None:
    session, first, _ = await two_turns(agent, provider, workspace)
    target = tmp_path / "forked"
    fork = await agent.call(
        "forkConversation",
        {"conversationId": session.id, "lastTurnId": first, "restoreFiles": {"directory": str(target)}},
    )
    assert fork["forkedFrom"]["turnId"] == first
    assert (target / "app.py").read_text() == "x = 10\ny = 2\n"  # after the first turn, before the second
    assert (target / "keep.txt").read_text() == "the user's\n" and (target / "first.txt").exists()
    assert not (target / "second.txt").exists()
    # the workspace itself is untouched
    assert (workspace / "second.txt").exists()

    refusals = {
        str(target): "not empty",
        "relative/dir": "absolute",
        str(home / "forked"): "openvaala's own files",
        str(workspace / ".git" / "x"): "governs the agent",
        str(tmp_path / "missing" / "deeper"): "parent",
    }
    for directory, why in refusals.items():
        with pytest.raises(ResponseError) as refused:
            await agent.call(
                "forkConversation", {"conversationId": session.id, "restoreFiles": {"directory": directory}}
            )
        assert refused.value.kind == "invalidParams" and why in refused.value.message, refused.value.message
        assert "restoreFiles" in refused.value.message


async def test_deleting_a_conversation_deletes_its_checkpoints(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, _, _ = await two_turns(agent, provider, workspace)
    store = agent.runtime.state.checkpoints
    [repo] = store.repos_of(session.id)
    assert repo.refs(session.id)
    await agent.call("deleteConversation", {"conversationId": session.id})
    assert store.repos_of(session.id) == [] and repo.refs(session.id) == {}


async def test_a_rewind_reverted_brings_the_turns_back_into_the_context_and_the_files(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, first, second = await two_turns(agent, provider, workspace)
    rewound = await agent.call("revertTurn", {"conversationId": session.id, "turnId": first, "history": True})
    assert rewound["revertedTurnIds"] == [first, second]
    assert (workspace / "app.py").read_text() == "x = 1\ny = 2\n"
    with pytest.raises(ResponseError) as refused:  # out of the context already: its revert is what to revert
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": second, "history": True})
    assert refused.value.kind == "invalidState" and rewound["revertedBy"] in refused.value.message
    redone = await agent.call(
        "revertTurn", {"conversationId": session.id, "turnId": rewound["revertedBy"], "history": True}
    )
    assert redone["revertedTurnIds"] == [rewound["revertedBy"]]
    assert (workspace / "app.py").read_text() == "x = 10\ny = 20\n" and (workspace / "second.txt").exists()
    turns = (await agent.call("getTurns", {"conversationId": session.id, "turnIds": [first, second]}))["turns"]
    assert [turn.get("revertedBy") for turn in turns] == [None, None]
    provider.enqueue("openai-chat", ChatStream().text("third").finish(usage=USAGE).response())
    await session.submit("third")
    await session.turn_completed(3)
    sent = json.dumps(provider.requests_for("openai-chat")[-1].json["messages"])
    assert "first done" in sent and "second done" in sent


async def test_a_forced_revert_replaces_a_planted_symlink_never_writing_through_it(
    agent: Harness, provider: FakeProviderServer, workspace: Path, tmp_path: Path
) -> None:
    session, first, _ = await two_turns(agent, provider, workspace)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    (workspace / "app.py").unlink()
    (workspace / "app.py").symlink_to(outside)  # planted where the agent left a file
    with pytest.raises(ResponseError) as refused:
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": first})
    assert refused.value.kind == "conflict"
    await agent.call("revertTurn", {"conversationId": session.id, "turnId": first, "force": True})
    assert outside.read_text() == "not the workspace's\n"
    assert not (workspace / "app.py").is_symlink() and (workspace / "app.py").read_text() == "x = 1\ny = 2\n"


async def test_no_revert_while_a_turn_runs(agent: Harness, provider: FakeProviderServer, workspace: Path) -> None:
    session, first, _ = await two_turns(agent, provider, workspace)
    provider.enqueue("openai-chat", ChatStream().text("slow").pause(30).finish().response())
    await session.submit("third")
    await session.wait_event(lambda e: e["type"] == "itemDelta" and e["delta"] == "slow")
    with pytest.raises(ResponseError) as refused:
        await agent.call("revertTurn", {"conversationId": session.id, "turnId": first})
    assert refused.value.kind == "invalidState" and "running" in refused.value.message
    await agent.call("interruptTurn", {"conversationId": session.id})
    await session.turn_completed(3)


async def test_a_turn_with_a_sub_agents_changes_reverts_whole(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    """The sub-agent's turn starts after its parent's and ends before it: what the parent wrote
    after it is what the revert expects to find, not a change of the user's."""
    agents = [
        {"name": "lead", "subAgents": ["helper"], "tools": ["shell"]},
        {"name": "helper", "description": "helps", "tools": ["shell"]},
    ]
    await agent.call("setDefinitions", {**definitions(provider), "agents": agents})
    (workspace / "notes.txt").write_text("orig\n")
    delegate = json.dumps({"agent": "helper", "task": "add a line"})
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "subagent", [delegate]).finish(usage=USAGE).response(),
        ChatStream().tool_call("c2", "shell", [json.dumps({"command": "echo sub >> notes.txt"})]).finish().response(),
        ChatStream().text("added").finish(usage=USAGE).response(),
        ChatStream().tool_call("c3", "shell", [json.dumps({"command": "echo lead >> notes.txt"})]).finish().response(),
        ChatStream().text("all done").finish(usage=USAGE).response(),
    )
    conversation = await agent.call("createConversation", {"agentName": "lead"})
    session = await Session.open(agent, conversation["id"])
    await session.submit("get help")
    turn = await session.turn_completed()
    assert (workspace / "notes.txt").read_text() == "orig\nsub\nlead\n"
    diff = await agent.call("getTurnDiff", {"conversationId": session.id, "turnId": turn["id"]})
    assert [(f["additions"], f["deletions"]) for f in diff["files"]] == [(2, 0)]
    reverted = await agent.call("revertTurn", {"conversationId": session.id, "turnId": turn["id"]})
    assert len(reverted["revertedTurnIds"]) == 2  # the lead's turn and the helper's
    assert (workspace / "notes.txt").read_text() == "orig\n"
