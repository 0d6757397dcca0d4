"""Finding 14, smaller limits: a client that declared `approvals: false` could answer `allowAlways`
(the two READMEs disagreed on whether it may), and a 200 kB deny message reached the model whole.
One function per limit.

The subscribeSession snapshot: queued inputs with screenshots made a snapshot of 69 MiB, over the
64 MiB message limit. It is now paged: the first page comes with the subscription, `getSessionSnapshot`
gives the rest, all of one snapshot taken at the subscription, so the pages plus the events after
them are exact.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.runtime.state import MAX_IMAGE_BYTES
from openvaala_lsp.tools.truncate import DEFAULT_MAX_OUTPUT
from openvaala_lsp.wire.framing import DEFAULT_MAX_MESSAGE

ASK_SHELL = {"name": "default", "permissions": {"default": "allow", "tools": {"shell": "ask"}}}


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def editor(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await harness.call("setDefinitions", {**definitions(provider), "agents": [ASK_SHELL]})
    yield harness
    await harness.stop()


def shell(command: str) -> Any:
    return ChatStream().tool_call("c1", "shell", [json.dumps({"command": command})]).finish().response()


async def asked(editor: Harness, provider: FakeProviderServer, command: str) -> tuple[Session, dict[str, Any]]:
    provider.enqueue("openai-chat", shell(command), ChatStream().text("ok").finish().response())
    session = await Session.open(editor)
    await session.submit("go")
    return session, await session.wait_event(lambda e: e["type"] == "approvalRequested")


async def test_approvals_a_client_that_declared_none_cannot_answer(
    editor: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, request = await asked(editor, provider, "touch made")
    watcher = editor.connect(approvals=False, name="viewer")
    answer = {"conversationId": session.id, "itemId": request["itemId"], "decision": "allowAlways"}
    with pytest.raises(ResponseError) as refused:
        await watcher.call("answerApproval", answer)
    assert refused.value.kind == "invalidState" and "approvals" in refused.value.message
    assert (await editor.call("getConversation", {"conversationId": session.id})).get("alwaysAllowed") in (None, [])
    await editor.call("answerApproval", answer | {"decision": "deny"})  # the question is still open
    await session.turn_completed()
    assert not (workspace / "made").exists()


async def test_deny_message_reaches_the_model_cut_like_tool_output(
    editor: Harness, provider: FakeProviderServer
) -> None:
    session, request = await asked(editor, provider, "rm -rf build")
    message = "no. " + "x" * 200_000 + " THE END"
    answer = {"conversationId": session.id, "itemId": request["itemId"], "decision": "deny", "message": message}
    await editor.call("answerApproval", answer)
    await session.turn_completed()
    [result] = [text_of(item) for item in await session.items() if item["type"] == "toolResult"]
    assert result.startswith("the user denied this call") and "no. xxx" in result and result.endswith(" THE END")
    assert len(result.encode()) <= DEFAULT_MAX_OUTPUT + 200 and "omitted ...]" in result
    sent = [m for r in provider.requests_for("openai-chat") for m in r.json["messages"] if m["role"] == "tool"]
    assert [message["content"] for message in sent] == [result]


# The subscribeSession snapshot (and the events after it) under the message limit

MiB = 1024 * 1024


def wire_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def image(size: int) -> dict[str, Any]:
    return {"type": "image", "mimeType": "image/png", "data": base64.b64encode(os.urandom(size)).decode()}


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    model = {
        "ref": {"provider": "fake", "name": "fake-model"},
        "api": "openai-chat",
        "baseUrl": provider.base_url("openai-chat"),
        "apiKeyEnv": "FAKE_API_KEY",
        "contextWindow": 10_000_000,
    }
    await harness.call("setDefinitions", {"models": [model]})
    yield harness
    await harness.stop()


async def test_snapshot_of_69_mib_is_paged_under_the_message_limit(
    agent: Harness, provider: FakeProviderServer
) -> None:
    # a turn that does not end, so that what is submitted meanwhile waits in the queue
    provider.enqueue("openai-chat", ChatStream().text("looking").pause(60).text(" never").finish().response())
    session = await Session.open(agent)
    await session.submit("start")
    await session.wait_event(lambda e: e["type"] == "turnStarted")
    queued = []
    for size in [MAX_IMAGE_BYTES] * 10 + [int(1.7 * MiB)]:
        content = [{"type": "text", "text": f"screenshot {len(queued)}"}, image(size)]
        queued.append((await agent.call("submitInput", {"conversationId": session.id, "content": content}))["itemId"])

    editor = agent.connect()  # a second editor opens the conversation now
    first = await editor.call("subscribeSession", {"conversationId": session.id, "sessionId": session.session_id})
    assert wire_size(first) < DEFAULT_MAX_MESSAGE
    assert [s["item"]["id"] for s in first["streamingItems"]], "the running turn's answer is on the first page"
    pages, cursor = [first], first.get("snapshotCursor")
    assert cursor, "a 69 MiB snapshot does not fit one message"
    # meanwhile the session moves on: an event, not part of the snapshot's pages
    late = (
        await agent.call("submitInput", {"conversationId": session.id, "content": [{"type": "text", "text": "late"}]})
    )["itemId"]
    while cursor:
        page = await editor.call("getSessionSnapshot", {"subscriptionId": first["subscriptionId"], "cursor": cursor})
        assert wire_size(page) < DEFAULT_MAX_MESSAGE
        pages.append(page)
        cursor = page.get("snapshotCursor")
    assert sum(wire_size(page) for page in pages) > DEFAULT_MAX_MESSAGE  # ~69 MiB: one answer could not hold it
    pending = [entry["item"] for page in pages for entry in page["pendingInputs"]]
    assert [item["id"] for item in pending] == queued  # every queued input once, in queue order
    assert all(part["data"] for item in pending for part in item["content"] if part["type"] == "image")

    added = await editor.wait_for(
        lambda m: (
            m["method"] == "openvaala/sessionEvent"
            and any(e["type"] == "pendingInputAdded" for e in m["params"]["events"])
        )
    )
    assert [e["item"]["id"] for e in added["params"]["events"] if e["type"] == "pendingInputAdded"] == [late]
    assert added["params"]["seq"] == 1

    # the snapshot is read once: its cursors are spent
    with pytest.raises(ResponseError) as refused:
        await editor.call(
            "getSessionSnapshot", {"subscriptionId": first["subscriptionId"], "cursor": pages[0]["snapshotCursor"]}
        )
    assert refused.value.kind == "invalidParams" and "$.cursor" in refused.value.message
    # and only its subscriber reads it
    with pytest.raises(ResponseError) as foreign:
        await agent.call("getSessionSnapshot", {"subscriptionId": first["subscriptionId"], "cursor": "1"})
    assert foreign.value.kind == "notFound"

    # the next turn takes the queued inputs: their events carry every image, each notification
    # under the limit
    provider.enqueue("openai-chat", ChatStream().text("all of them").finish().response())
    await agent.call("interruptTurn", {"conversationId": session.id})
    await session.turn_completed(2)
    completed = [
        e["item"]["id"]
        for n in editor.of("openvaala/sessionEvent")
        for e in n["events"]
        if e["type"] == "itemCompleted"
    ]
    assert set(queued) <= set(completed)
    for client in (agent, editor):
        sizes = [wire_size(n) for n in client.of("openvaala/sessionEvent")]
        assert max(sizes) < DEFAULT_MAX_MESSAGE, "a notification passes the message limit"


async def test_snapshot_that_fits_is_one_message_as_before(agent: Harness, provider: FakeProviderServer) -> None:
    session = await Session.open(agent)
    assert "snapshotCursor" not in session.snapshot
    assert session.snapshot["pendingInputs"] == [] and session.snapshot["streamingItems"] == []
