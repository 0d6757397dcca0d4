"""A whole turn in process: the model streams, calls tools in rounds, and the session's items,
events, usage and context usage say exactly what happened; queued inputs run as the next turn;
a provider failure fails the turn; the turn reads on (a little) while its commits are under way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer, RecordedRequest, error_response, insufficient_quota
from harness import Harness
from turn_helpers import API_KEY, USAGE, Session, text_of

from openvaala_lsp.runtime import turns


async def test_a_turn_with_two_tool_rounds(agent: Harness, provider: FakeProviderServer, workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .text("Let me look.")
        .tool_call("call_1", "read_file", ['{"pa', 'th": "hel', 'lo.txt"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream()
        .tool_call("call_2", "shell", ['{"command": "echo ${FAKE_API_KEY:-no key} ${PATH:+path}; pwd"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream().text("All ", "done.").finish(usage=USAGE).response(),
    )
    session = await Session.open(agent)
    item_id = await session.submit("read hello.txt then run a command")
    turn = await session.turn_completed()
    assert turn["status"] == "completed" and "error" not in turn
    assert turn["usage"]["inputTokens"] == 360 and turn["usage"]["cachedInputTokens"] == 60
    assert (await agent.call("listTurns", {"conversationId": session.id}))["items"] == [turn]  # saved as reported

    items = await session.items()
    kinds = [item["type"] for item in items]
    assert kinds == [
        "userMessage",
        "assistantMessage",
        "toolCall",
        "toolResult",
        "toolCall",
        "toolResult",
        "assistantMessage",
    ]
    assert items[0]["id"] == item_id and items[0]["status"] == "completed" and items[0]["turnId"] == turn["id"]
    assert items[2]["toolCall"] == {"callId": "call_1", "name": "read_file", "arguments": '{"path": "hello.txt"}'}
    assert "hello from the workspace" in text_of(items[3]) and items[3]["toolResult"]["isError"] is False
    shell_output = text_of(items[5])
    assert str(workspace.resolve()) in shell_output  # ran in the conversation's directory
    assert "no key path" in shell_output  # with the client's environment, but never a model's key
    assert text_of(items[6]) == "All done."

    # every completed item was announced with its ordinal, in order, once
    completed = [e for e in session.events() if e["type"] == "itemCompleted"]
    assert [e["ordinal"] for e in completed] == list(range(1, 8))
    assert [e["item"]["id"] for e in completed] == [item["id"] for item in items]
    # deltas rebuild exactly the streamed text
    deltas = "".join(e["delta"] for e in session.events() if e["type"] == "itemDelta" and e["itemId"] == items[6]["id"])
    assert deltas == "All done."

    requests = provider.requests_for("openai-chat")
    assert len(requests) == 3
    assert requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert {tool["function"]["name"] for tool in requests[0].json["tools"]} >= {"shell", "read_file", "edit", "grep"}
    second = requests[1].json["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    assert "hello from the workspace" in second[-1]["content"]

    usage = await agent.call("getSessionContextUsage", {"conversationId": session.id, "sessionId": session.session_id})
    assert usage["window"] == 8000 and usage["thresholdTokens"] == 6800  # 85 % of the window
    assert usage["lastRequest"]["usage"]["totalTokens"] == 150
    # the final answer is in the last call's output: the next request is exactly what it reported
    assert usage["nextRequest"] == {"source": "actual", "tokens": 150, "window": 8000}
    assert len(usage["items"]) == 7 and usage["toolTokens"] > 0 and usage["systemTokens"] > 0
    context_events = [e for e in session.events() if e["type"] == "contextUsageUpdated"]
    assert context_events[-1]["context"] == {"source": "actual", "tokens": 150, "window": 8000}
    states = [e["state"] for e in session.events() if e["type"] == "stateChanged"]
    assert states == ["running", "idle"]


async def test_queued_input_runs_as_the_next_turn(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("one").pause(0.5).finish().response(),
        ChatStream().text("two").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "turnStarted")
    second = await session.submit("second")
    assert (await session.turn_completed(2))["status"] == "completed"
    items = await session.items()
    assert [text_of(i) for i in items] == ["first", "one", "second", "two"]
    assert items[2]["id"] == second


async def test_the_input_shows_saved_before_the_model_answers(agent: Harness, provider: FakeProviderServer) -> None:
    """A model slow to answer does not hold back the turn's start: the input is reported saved as
    soon as its commit ends."""
    provider.enqueue("openai-chat", ChatStream(role_chunk=False).response(ending="hang"))  # never answers
    session = await Session.open(agent)
    item_id = await session.submit("hello")
    saved = await session.wait_event(lambda e: e["type"] == "itemCompleted", timeout=10)
    assert saved["item"]["id"] == item_id and saved["item"]["status"] == "completed"
    kinds = [e["type"] for e in session.events()]
    assert kinds.index("turnStarted") < kinds.index("pendingInputRemoved") < kinds.index("itemCompleted")
    assert "itemStarted" not in kinds
    # the request went out beside the commit: it may reach the model after the commit ended
    assert len(await requests_made(provider, 1)) == 1
    await agent.call("interruptTurn", {"conversationId": session.id})
    assert (await session.turn_completed())["status"] == "interrupted"
    assert [text_of(item) for item in await session.items()] == ["hello"]


async def test_the_answer_saved_and_the_turn_s_end_come_in_one_notification(
    agent: Harness, provider: FakeProviderServer
) -> None:
    """One commit saves both: the editor hears of them at once, not in two messages."""
    provider.enqueue("openai-chat", ChatStream().text("Hi.").finish(usage=USAGE).response())
    session = await Session.open(agent)
    await session.submit("hello")
    await session.turn_completed()
    await session.wait_event(lambda e: e["type"] == "stateChanged" and e["state"] == "idle")
    notifications = [n["events"] for n in agent.of("openvaala/sessionEvent", session.sub)]
    [ending] = [kinds for kinds in notifications if any(e["type"] == "turnCompleted" for e in kinds)]
    assert [(e["type"], e.get("item", {}).get("type")) for e in ending] == [
        ("itemCompleted", "assistantMessage"),
        ("turnCompleted", None),
        ("stateChanged", None),
    ]


async def test_provider_failure_fails_the_turn(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", insufficient_quota("openai-chat"))
    session = await Session.open(agent)
    await session.submit("hello")  # acknowledged: the failure is the turn's, not the request's
    turn = await session.turn_completed()
    assert turn["status"] == "failed" and turn["error"]["kind"] == "insufficientQuota"
    assert (await agent.call("listTurns", {"conversationId": session.id}))["items"] == [turn]
    error = next(e for e in session.events() if e["type"] == "error")
    assert error["error"]["kind"] == "insufficientQuota"
    assert API_KEY not in json.dumps(session.events())
    assert len(provider.requests_for("openai-chat")) == 1  # never retried


async def test_a_call_refused_before_any_answer_counts_no_tokens(agent: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", error_response("openai-chat", 404, "no such model"))
    session = await Session.open(agent)
    await session.submit("hello")
    turn = await session.turn_completed()
    assert turn["status"] == "failed" and turn["usage"]["totalTokens"] == 0
    rows = await agent.call(
        "query", {"sql": "SELECT total_tokens, usage_estimated, error IS NOT NULL FROM model_calls"}
    )
    assert rows["rows"] == [[0, False, True]]


async def test_a_new_session_names_its_context_window(agent: Harness) -> None:
    conversation = await agent.call("createConversation")
    watched = await agent.call("subscribeConversation", {"conversationId": conversation["id"]})
    assert watched["sessions"][0]["context"] == {"source": "unknown", "tokens": 0, "window": 8000}


async def test_a_quick_tool_s_result_goes_to_the_model_before_the_call_is_committed(
    agent: Harness, provider: FakeProviderServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next request does not wait for the call's commit; the events still come in order, each
    reporting only what is committed: the call saved, then its result started and saved."""
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("call_1", "read_file", ['{"path": "hello.txt"}']).finish(usage=USAGE).response(),
        ChatStream().text("Read it.").finish(usage=USAGE).response(),
    )
    gate = hold_commits(agent, monkeypatch, after=1)  # the turn's start commits; what comes after waits
    session = await Session.open(agent)
    await session.submit("read hello.txt")
    second = (await requests_made(provider, 2))[1].json["messages"]
    assert second[-1]["role"] == "tool" and "hello from the workspace" in second[-1]["content"]
    saved = [e["item"]["type"] for e in session.events() if e["type"] == "itemCompleted"]
    assert saved == ["userMessage"]  # the call and its result are not committed: not reported saved
    gate.set()
    assert (await session.turn_completed())["status"] == "completed"
    reported = [
        (e["type"], e["item"]["type"])
        for e in session.events()
        if e["type"] in ("itemStarted", "itemCompleted") and e["item"]["type"] in ("toolCall", "toolResult")
    ]
    assert reported == [
        ("itemStarted", "toolCall"),
        ("itemCompleted", "toolCall"),
        ("itemStarted", "toolResult"),
        ("itemCompleted", "toolResult"),
    ]
    started = next(e for e in session.events() if e["type"] == "itemStarted" and e["item"]["type"] == "toolResult")
    assert started["item"]["status"] == "streaming" and text_of(started["item"]) == ""  # as a slow tool's
    items = await session.items()
    assert [item["type"] for item in items] == ["userMessage", "toolCall", "toolResult", "assistantMessage"]
    assert "hello from the workspace" in text_of(items[2])


async def test_the_answer_is_read_and_a_quick_tool_run_while_the_turn_s_start_commits(
    agent: Harness, provider: FakeProviderServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn does not stop for its start's commit: the answer is read and its quick tool run
    meanwhile, and nothing is reported until that commit ends; then everything, in order. A
    subscriber that comes meanwhile has what was done in its snapshot and is not told it again."""
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .text("Let me ")
        .text("look.")
        .tool_call("call_1", "read_file", ['{"path": "hello.txt"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream().text("Read ").text("it.").finish(usage=USAGE).response(),
    )
    session = await Session.open(agent)
    gate = hold_commits(agent, monkeypatch)
    submitting = asyncio.ensure_future(session.submit("read hello.txt"))  # answered once committed
    try:
        requests = await requests_made(provider, 2)
        assert len(requests) == 2, "the turn waited for its start's commit"
        assert requests[1].json["messages"][-1]["role"] == "tool"
        assert "hello from the workspace" in requests[1].json["messages"][-1]["content"]
        assert [e["type"] for e in session.events()] == ["pendingInputAdded"]
        late = await Session.open(agent, session.id)
        snapshot = late.snapshot["streamingItems"]
        assert [s["item"]["type"] for s in snapshot][:2] == ["assistantMessage", "toolCall"]
        assert text_of(snapshot[0]["item"]) == "Let me look."
    finally:
        gate.set()
    item_id = await submitting
    assert (await session.turn_completed())["status"] == "completed"
    await late.turn_completed()
    kinds = [e["type"] for e in session.events()]
    assert kinds[:6] == [
        "pendingInputAdded",
        "turnStarted",
        "stateChanged",
        "pendingInputRemoved",
        "itemCompleted",
        "itemStarted",
    ]
    assert session.events()[4]["item"]["id"] == item_id
    assert session.events()[5]["item"]["type"] == "assistantMessage"
    saved = [e["item"]["type"] for e in session.events() if e["type"] == "itemCompleted"]
    assert saved == ["userMessage", "assistantMessage", "toolCall", "toolResult", "assistantMessage"]
    # the late subscriber: its snapshot plus its events make each item exactly once
    texts = {s["item"]["id"]: text_of(s["item"]) for s in late.snapshot["streamingItems"]}
    for event in late.events():
        if event["type"] == "itemStarted":
            assert event["item"]["id"] not in texts, "told again what its snapshot has"
            texts[event["item"]["id"]] = text_of(event["item"])
        elif event["type"] == "itemDelta":
            texts[event["itemId"]] += event["delta"]
    items = await session.items()
    assert [item["type"] for item in items] == [
        "userMessage",
        "assistantMessage",
        "toolCall",
        "toolResult",
        "assistantMessage",
    ]
    for item in items[1:]:
        if item["type"] == "assistantMessage":
            assert texts[item["id"]] == text_of(item)
    assert text_of(items[-1]) == "Read it."


async def test_a_long_answer_waits_for_the_turn_s_start_commit_after_reading_a_little_ahead(
    agent: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a long answer on would starve the commit its events wait for (the storage's writer
    thread needs the GIL): the turn reads a little ahead (`READ_AHEAD_CHARS`, and the delta that went
    past it), then waits."""
    whole = "".join(f"{n:05d} {'x' * 34}" for n in range(5000))  # 200,000 characters
    stream = ChatStream().text(*(whole[at : at + 40] for at in range(0, len(whole), 40)))
    provider.enqueue("openai-chat", stream.finish(usage=USAGE).response())
    session = await Session.open(agent)
    gate = hold_commits(agent, monkeypatch)
    submitting = asyncio.ensure_future(session.submit("count"))
    try:
        assert len(await requests_made(provider, 1)) == 1
        await asyncio.sleep(0.5)  # time enough to read far more of it, were it read on
        late = await Session.open(agent, session.id)
        [answer] = late.snapshot["streamingItems"]
        read = text_of(answer["item"])
        assert 0 < len(read) <= turns.READ_AHEAD_CHARS + 40
        assert whole.startswith(read)
    finally:
        gate.set()
    await submitting
    assert (await session.turn_completed())["status"] == "completed"
    deltas = "".join(e["delta"] for e in late.events() if e["type"] == "itemDelta")
    assert text_of(answer["item"]) + deltas == whole
    assert text_of((await session.items())[-1]) == whole


async def test_a_turn_whose_start_cannot_be_saved_fails_before_running_a_tool(
    agent: Harness, provider: FakeProviderServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn reads on during its start's commit, but a commit that fails ends it: the tool the
    model asked for is not run, and no second request is made."""
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("call_1", "shell", ['{"command": "touch ran"}']).finish(usage=USAGE).response(),
        ChatStream().text("done").finish(usage=USAGE).response(),
    )
    session = await Session.open(agent)
    storage = agent.runtime.storage
    commit = storage.flush
    failed = 0

    async def failing_commit() -> None:
        nonlocal failed
        if not failed:
            failed += 1
            raise OSError("disk full")
        await commit()

    monkeypatch.setattr(storage, "flush", failing_commit)
    with pytest.raises(Exception, match="internal error"):
        await session.submit("touch a file")  # the input's commit failed: not acknowledged
    turn = await session.turn_completed()
    assert turn["status"] == "failed" and turn["error"]["kind"] == "internal"
    assert "disk full" in turn["error"]["message"]
    assert len(provider.requests_for("openai-chat")) == 1
    assert not (workspace / "ran").exists()


def hold_commits(agent: Harness, monkeypatch: pytest.MonkeyPatch, *, after: int = 0) -> asyncio.Event:
    """The runtime's commits after the first `after` wait until the returned event is set."""
    storage = agent.runtime.storage
    commit, gate = storage.flush, asyncio.Event()
    commits = 0

    async def held_commit() -> None:
        nonlocal commits
        commits += 1
        if commits > after:
            await gate.wait()
        await commit()

    monkeypatch.setattr(storage, "flush", held_commit)
    return gate


async def requests_made(provider: FakeProviderServer, count: int) -> list[RecordedRequest]:
    """The model's requests once there are `count` (or after 5 s, however many there are)."""
    for _ in range(500):
        if len(provider.requests_for("openai-chat")) >= count:
            break
        await asyncio.sleep(0.01)
    return provider.requests_for("openai-chat")
