"""submitInput: idempotency by inputId, content validation, no model configured, not open, what commits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import Session

from openvaala_lsp.storage.writer import BatchWriter


async def test_input_idempotency_and_validation(agent: Harness, provider: FakeProviderServer) -> None:
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    session = await Session.open(agent)
    first = await session.submit("once", inputId="client-key-1")
    again = await session.submit("once", inputId="client-key-1")
    assert first == again
    await session.turn_completed()
    assert await session.submit("once", inputId="client-key-1") == first
    assert len([i for i in await session.items() if i["type"] == "userMessage"]) == 1
    # the same key sent several times at once (an editor retrying) still makes one input
    raced = await asyncio.gather(*(session.submit("twice", inputId="client-key-2") for _ in range(5)))
    assert len(set(raced)) == 1
    await session.turn_completed(2)
    assert len([i for i in await session.items() if i["type"] == "userMessage"]) == 2

    for content, path in (
        ([], "$.content"),
        ([{"type": "text"}], "$.content[0].text"),
        ([{"type": "video", "text": "x"}], "$.content[0].type"),
        ([{"type": "image", "mimeType": "image/png", "data": "!!"}], "$.content[0].data"),
        ([{"type": "image", "mimeType": "image/png", "data": "A" * (8 * 1024 * 1024)}], "$.content[0].data"),
    ):
        with pytest.raises(ResponseError) as err:
            await agent.call("submitInput", {"conversationId": session.id, "content": content})
        assert err.value.kind == "invalidParams" and path in err.value.message, (content, err.value.message)
    with pytest.raises(ResponseError) as err:
        await agent.call("steerInput", {"conversationId": session.id, "itemId": first, "turnId": "turn_x"})
    assert err.value.kind in ("notFound", "invalidState")


async def test_no_model_and_not_open(home: Path, workspace: Path) -> None:
    lsp = await Harness.start(home, [workspace])
    try:
        conversation = await lsp.call("createConversation")
        with pytest.raises(ResponseError) as err:
            await lsp.call(
                "submitInput", {"conversationId": conversation["id"], "content": [{"type": "text", "text": "hi"}]}
            )
        assert (err.value.code, err.value.kind) == (-32013, "noModelConfigured")
        assert err.value.message == "no model is configured; run openvaala to set up a model provider"
    finally:
        await lsp.stop()
    lsp = await Harness.start(home, [workspace])  # a restarted runtime holds nothing open
    try:
        for method, extra in (
            ("submitInput", {"content": [{"type": "text", "text": "hi"}]}),
            ("interruptTurn", {}),
            ("subscribeSession", {"sessionId": "sess_x"}),
            ("withdrawInput", {"itemId": "item_x"}),
        ):
            with pytest.raises(ResponseError) as err:
                await lsp.call(method, {"conversationId": conversation["id"], **extra})
            assert (err.value.code, err.value.kind) == (-32011, "conversationNotOpen"), method
    finally:
        await lsp.stop()


async def test_an_input_an_idle_session_takes_commits_with_its_turn(
    agent: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One commit stands between the submit and the model's first words shown, not two: nothing asks
    for a commit before the turn's row and the input's item are queued behind the input, and the
    input never reaches `pending_inputs` (queued and taken in one batch)."""
    asked: list[str] = []  # what reached the writer, in order: table names, "commit" for each request
    submit, barrier = BatchWriter.submit, BatchWriter.barrier

    def recording_submit(self: BatchWriter, ops: Any, *, durable: bool) -> Any:
        asked.extend(table_name(op) for op in ops)
        if durable:
            asked.append("commit")
        return submit(self, ops, durable=durable)

    def recording_barrier(self: BatchWriter, *, visible: bool = False) -> Any:
        asked.append("commit")
        return barrier(self, visible=visible)

    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    session = await Session.open(agent)
    monkeypatch.setattr(BatchWriter, "submit", recording_submit)
    monkeypatch.setattr(BatchWriter, "barrier", recording_barrier)
    await session.submit("hello")
    await session.turn_completed()
    first = asked[: asked.index("commit")]
    assert {"pending_inputs", "turns", "items"} <= set(first), asked
    # the first exchange's title is saved by a task of its own: its commit could land between the
    # next input's queueing and its turn's start, and commit the input alone (correct, but not this test)
    async with asyncio.timeout(20):
        while not (await agent.call("getConversation", {"conversationId": session.id}))["title"]:
            await asyncio.sleep(0.01)
    commits: list[set[str]] = []
    original = BatchWriter._commit

    def recording_commit(self: BatchWriter, group: Any) -> None:
        commits.append(
            {
                table.name
                for batch in group
                for segment in batch.segments
                for table, rows in segment.records.items()
                if rows
            }
        )
        original(self, group)

    monkeypatch.setattr(BatchWriter, "_commit", recording_commit)
    await session.submit("again")
    await session.turn_completed(2)
    await agent.call("listItems", {"conversationId": session.id})  # a read: DuckDB commits what the journal holds
    assert commits and all("pending_inputs" not in tables for tables in commits), commits


def table_name(op: Any) -> str:
    table = getattr(op, "table", "run")  # Append names its table, Put/Delete/Update carry it
    return table if isinstance(table, str) else str(table.name)
