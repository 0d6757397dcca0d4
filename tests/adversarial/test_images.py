"""Finding 8: images break conversations. Screenshots were stored inline in `items.payload`: after 14
of them `listItems` failed with `internal`, and after a restart the next turn ran DuckDB out of memory.

Images (and big text parts) now live in content-addressed files beside the database: these tests fill
conversations with the largest images an editor may send (`MAX_IMAGE_BYTES`, 5 MiB) and check that
every page, every restart and every turn still works, that each image comes back exactly, that its
file goes with its conversation but not while a fork still needs it, and that an image the runtime
acknowledged survives `kill -9`.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from lsp_client import LspClient
from turn_helpers import API_KEY, Session

from openvaala_lsp.model import (
    Content,
    Conversation,
    Item,
    ItemType,
    Session as SessionRecord,
    Turn,
    TurnStatus,
    new_id,
)
from openvaala_lsp.runtime.context import MAX_REQUEST_IMAGE_BYTES
from openvaala_lsp.runtime.state import MAX_IMAGE_BYTES
from openvaala_lsp.storage import opening
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.wire.framing import DEFAULT_MAX_MESSAGE

WINDOW = 10_000_000  # no compaction: every image stays in the model's context


def definitions(provider: FakeProviderServer) -> dict[str, Any]:
    model = {
        "ref": {"provider": "fake", "name": "fake-model"},
        "api": "openai-chat",
        "baseUrl": provider.base_url("openai-chat"),
        "apiKeyEnv": "FAKE_API_KEY",
        "contextWindow": WINDOW,
    }
    return {"models": [model]}


def screenshot() -> str:
    """The largest image submitInput takes, as base64; random, so no two are alike."""
    return base64.b64encode(os.urandom(MAX_IMAGE_BYTES)).decode()


def image_part(data: str) -> dict[str, Any]:
    return {"type": "image", "mimeType": "image/png", "data": data}


def blob_files(home: Path) -> set[str]:
    directory = home / "openvaala.duckdb.blobs"
    return {entry.name for entry in directory.iterdir()} if directory.exists() else set()


def wire_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


async def all_items(client: Harness | LspClient, conversation_id: str, order: str = "asc") -> list[dict[str, Any]]:
    """Every item, page by page as an editor reads them; no page may pass the message limit."""
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"conversationId": conversation_id, "order": order, "limit": 500}
    while True:
        page = await client.call("listItems", params)
        assert wire_size(page) < DEFAULT_MAX_MESSAGE, "a listItems page passes the message limit"
        assert page["items"], "a page without items, but a cursor"
        items += [logged["item"] for logged in page["items"]]
        if "nextCursor" not in page:
            return items
        params["cursor"] = page["nextCursor"]


def images_of(items: list[dict[str, Any]]) -> list[str]:
    return [part["data"] for item in items for part in item.get("content", []) if part["type"] == "image"]


def sent_images(provider: FakeProviderServer) -> list[str]:
    """The images of the last model request, in order."""
    [*_, request] = provider.requests_for("openai-chat")
    return [
        part["image_url"]["url"].partition(",")[2]
        for message in request.json["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def forget_requests(provider: FakeProviderServer) -> None:
    """The scripted server keeps what it was sent; requests of hundreds of MiB need not pile up."""
    with provider._lock:
        provider._requests.clear()


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


async def start(home: Path, workspace: Path, provider: FakeProviderServer) -> Harness:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    await harness.call("setDefinitions", definitions(provider))
    return harness


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await start(home, workspace, provider)
    yield harness
    await harness.stop()


async def test_fourteen_screenshots_then_list_items_a_restart_and_a_turn(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    first = await start(home, workspace, provider)
    session = await Session.open(first)
    shots = [screenshot() for _ in range(14)]
    for number, shot in enumerate(shots, 1):
        provider.enqueue("openai-chat", ChatStream().text(f"seen {number}").finish().response())
        content = [{"type": "text", "text": f"screenshot {number}"}, image_part(shot)]
        await first.call("submitInput", {"conversationId": session.id, "content": content})
        assert (await session.turn_completed(number))["status"] == "completed"
        forget_requests(provider)
    items = await all_items(first, session.id)
    assert len(items) == 28 and images_of(items) == shots
    assert images_of(await all_items(first, session.id, "desc")) == shots[::-1]
    await first.stop()

    second = await start(home, workspace, provider)
    try:
        again = await Session.open(second, session.id)
        provider.enqueue("openai-chat", ChatStream().text("all fourteen").finish().response())
        await again.submit("what changed across them?")
        turn = await again.turn_completed()
        assert turn["status"] == "completed", turn
        # the newest that fit one request's budget, the older ones named in their place
        fit = MAX_REQUEST_IMAGE_BYTES // MAX_IMAGE_BYTES
        assert sent_images(provider) == shots[-fit:]
        [*_, request] = provider.requests_for("openai-chat")
        assert json.dumps(request.json).count("an earlier image (image/png, 5.0 MiB) left out") == 14 - fit
        assert images_of(await all_items(second, session.id)) == shots
    finally:
        await second.stop()


async def seed_images(storage: DuckDBStorage, count: int, per_write: int = 10) -> tuple[str, str, list[str]]:
    """A conversation of `count` finished turns, each a user message with one image and a reply,
    written as an import writes them; (conversation id, session id, the images in order)."""
    now = dt.datetime.now(dt.UTC)
    conversation = Conversation(id=new_id("conv"), created_at=now, updated_at=now)
    session = SessionRecord(id=new_id("sess"), conversation_id=conversation.id, created_at=now)
    await storage.create_conversation(conversation, session)
    shots: list[str] = []
    for first in range(0, count, per_write):
        turns, items = [], []
        for _ in range(min(per_write, count - first)):
            turn = Turn(
                id=new_id("turn"),
                conversation_id=conversation.id,
                session_id=session.id,
                status=TurnStatus.COMPLETED,
                started_at=now,
                ended_at=now,
            )
            shots.append(screenshot())
            turns.append(turn)
            for kind, content in (
                (ItemType.USER_MESSAGE, [Content(type="image", mime_type="image/png", data=shots[-1])]),
                (ItemType.ASSISTANT_MESSAGE, [Content(type="text", text="seen")]),
            ):
                items.append(
                    Item(
                        id=new_id("item"),
                        conversation_id=conversation.id,
                        session_id=session.id,
                        turn_id=turn.id,
                        type=kind,
                        created_at=now,
                        content=content,
                    )
                )
        await storage.bulk_write(turns=turns, items=items)
    return conversation.id, session.id, shots


@pytest.mark.e2e
async def test_two_hundred_images_of_5_mib(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    """The real process over stdio, so the transport's own limit judges every page; then a restart
    that loads the whole history back (what a turn's first model call sends)."""
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    try:
        conversation_id, session_id, shots = await seed_images(storage, 200)
    finally:
        await storage.close()
    assert len(blob_files(home)) == 200

    env = {"FAKE_API_KEY": API_KEY}
    for start in range(2):  # a start, and a start after it (which finds the first one's turn too)
        lsp = await LspClient.spawn(home, cwd=workspace, env=env, args=["--standalone"])
        try:
            await lsp.initialize([workspace])
            await lsp.call("setDefinitions", definitions(provider))
            assert images_of(await all_items(lsp, conversation_id, "desc")) == shots[::-1]
            session = await Session.open(lsp, conversation_id)
            usage = await lsp.call(
                "getSessionContextUsage", {"conversationId": conversation_id, "sessionId": session_id}, timeout=120
            )
            assert len(usage["items"]) == 400 + 2 * start
            memory = await lsp.call("query", {"sql": "SELECT sum(memory_usage_bytes) AS used FROM duckdb_memory()"})
            assert memory["rows"][0][0] < 64 * 1024 * 1024, "DuckDB holds the images"
            assert session.snapshot["pendingInputs"] == []
            provider.enqueue("openai-chat", ChatStream().text("seen them").finish().response())
            await session.submit("what do they show?")
            assert (await session.turn_completed())["status"] == "completed"
            assert len(sent_images(provider)) == MAX_REQUEST_IMAGE_BYTES // MAX_IMAGE_BYTES  # not 1 GB of them
            forget_requests(provider)
        finally:
            await lsp.shutdown()


async def test_ten_thousand_items(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    now = dt.datetime.now(dt.UTC)
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    try:
        conversation = Conversation(id=new_id("conv"), created_at=now, updated_at=now)
        record = SessionRecord(id=new_id("sess"), conversation_id=conversation.id, created_at=now)
        await storage.create_conversation(conversation, record)
        turn = Turn(id=new_id("turn"), conversation_id=conversation.id, session_id=record.id, started_at=now)
        turn.status, turn.ended_at = TurnStatus.COMPLETED, now
        texts = [f"item {n} " + "x" * 2000 for n in range(10_000)]
        for first in range(0, len(texts), 1000):
            items = [
                Item(
                    id=new_id("item"),
                    conversation_id=conversation.id,
                    session_id=record.id,
                    turn_id=turn.id,
                    type=ItemType.USER_MESSAGE if n % 2 == 0 else ItemType.ASSISTANT_MESSAGE,
                    created_at=now,
                    content=[Content(type="text", text=text)],
                )
                for n, text in enumerate(texts[first : first + 1000], first)
            ]
            await storage.bulk_write(turns=[turn] if first == 0 else [], items=items)
    finally:
        await storage.close()

    harness = await start(home, workspace, provider)
    try:
        items = await all_items(harness, conversation.id)
        assert [item["content"][0]["text"] for item in items] == texts
        session = await Session.open(harness, conversation.id)
        provider.enqueue("openai-chat", ChatStream().text("ten thousand").finish().response())
        await session.submit("and now?")
        assert (await session.turn_completed())["status"] == "completed"
        [request] = provider.requests_for("openai-chat")
        assert len(request.json["messages"]) >= 10_001
    finally:
        await harness.stop()


async def test_running_out_of_memory_names_the_cause(
    home: Path, workspace: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the database still run out of memory, the editor is told so, not a bare `internal`."""
    now = dt.datetime.now(dt.UTC)
    storage = await DuckDBStorage.open(str(home / "openvaala.duckdb"))
    try:
        conversation = Conversation(id=new_id("conv"), created_at=now, updated_at=now)
        record = SessionRecord(id=new_id("sess"), conversation_id=conversation.id, created_at=now)
        await storage.create_conversation(conversation, record)
        rows = [
            Item(
                id=new_id("item"),
                conversation_id=conversation.id,
                session_id=record.id,
                type=ItemType.ASSISTANT_MESSAGE,
                created_at=now,
                content=[Content(type="text", text=os.urandom(7000).hex())],  # the longest a row keeps
            )
            for _ in range(3000)
        ]
        await storage.bulk_write(items=rows)
    finally:
        await storage.close()
    monkeypatch.setitem(opening.CONFIG, "memory_limit", "4MB")  # far below what it needs
    harness = await start(home, workspace, provider)
    try:
        with pytest.raises(ResponseError) as failed:
            await harness.call("listItems", {"conversationId": conversation.id, "limit": 500})
        assert failed.value.kind == "internal"
        assert "the database ran out of memory (its memory_limit is 4MB)" in failed.value.message
    finally:
        await harness.stop()


async def test_deleting_a_conversation_removes_its_image_files(
    agent: Harness, home: Path, provider: FakeProviderServer
) -> None:
    shared, own = screenshot(), screenshot()
    sessions = []
    for shots in ([shared, own], [shared]):
        session = await Session.open(agent)
        provider.enqueue("openai-chat", ChatStream().text("seen").finish().response())
        content = [image_part(shot) for shot in shots]
        await agent.call("submitInput", {"conversationId": session.id, "content": content})
        assert (await session.turn_completed())["status"] == "completed"
        sessions.append(session)
    assert len(blob_files(home)) == 2  # one file per distinct image
    await agent.call("deleteConversation", {"conversationId": sessions[0].id})
    assert len(blob_files(home)) == 1  # the other conversation's image stays
    assert images_of(await all_items(agent, sessions[1].id)) == [shared]
    await agent.call("deleteConversation", {"conversationId": sessions[1].id})
    assert blob_files(home) == set()


async def test_a_fork_keeps_the_images_its_source_takes_along(
    agent: Harness, home: Path, provider: FakeProviderServer
) -> None:
    session = await Session.open(agent)
    shot = screenshot()
    provider.enqueue("openai-chat", ChatStream().text("seen").finish().response())
    await agent.call("submitInput", {"conversationId": session.id, "content": [image_part(shot)]})
    assert (await session.turn_completed())["status"] == "completed"
    fork = await agent.call("forkConversation", {"conversationId": session.id})
    await agent.call("deleteConversation", {"conversationId": session.id})
    assert len(blob_files(home)) == 1
    assert images_of(await all_items(agent, fork["id"])) == [shot]
    await agent.call("deleteConversation", {"conversationId": fork["id"]})
    assert blob_files(home) == set()


@pytest.mark.e2e
async def test_an_acknowledged_image_survives_kill_9(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    # the model never answers: the turn holds the input while the runtime is killed
    provider.enqueue("openai-chat", ChatStream().pause(60).text("never").finish().response())
    env = {"FAKE_API_KEY": API_KEY}
    first = await LspClient.spawn(home, cwd=workspace, env=env, args=["--standalone"])
    await first.initialize([workspace])
    await first.call("setDefinitions", definitions(provider))
    conversation = await first.call("createConversation")
    shot = screenshot()
    await first.call("submitInput", {"conversationId": conversation["id"], "content": [image_part(shot)]})
    os.kill(first.process.pid, signal.SIGKILL)
    await first.close()

    second = await LspClient.spawn(home, cwd=workspace, env=env, args=["--standalone"])
    await second.initialize([workspace])
    try:
        session = await Session.open(second, conversation["id"])
        items = await all_items(second, conversation["id"])
        pending = [entry["item"] for entry in session.snapshot["pendingInputs"]]
        assert images_of(items) + images_of(pending) == [shot]
    finally:
        await second.shutdown()
