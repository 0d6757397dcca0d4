"""Images and long texts in files beside the database (`storage/blobs.py`): durable before the rows
that name them, also across a kill; one file for equal data; swept when nothing names them; never
collected while a batch on its way to DuckDB still needs them."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from openvaala_lsp.model import Content, Conversation, Item, ItemType, Session, ToolCall
from openvaala_lsp.storage import blobs, codec
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.opening import CONFIG

NOW = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
IMAGE = base64.b64encode(bytes(range(256)) * 64).decode()
LONG = "long text " * 10_000  # a row of its own would pass codec.ROW_BYTES


def item(iid: str, cid: str, *parts: Content) -> Item:
    return Item(
        id=iid,
        conversation_id=cid,
        session_id=f"sess_{cid}",
        type=ItemType.USER_MESSAGE,
        created_at=NOW,
        content=list(parts),
    )


def image(data: str = IMAGE) -> Content:
    return Content(type="image", mime_type="image/png", data=data)


async def conversation(storage: DuckDBStorage, cid: str) -> None:
    await storage.create_conversation(
        Conversation(id=cid, created_at=NOW, updated_at=NOW),
        Session(id=f"sess_{cid}", conversation_id=cid, created_at=NOW),
    )


def files(db: Path) -> list[str]:
    directory = Path(blobs.directory_of(str(db)))
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def sql(path: Path, query: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(path), config=CONFIG)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


async def test_big_parts_are_files_and_the_row_names_them(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    storage = await DuckDBStorage.open(str(db))
    try:
        await conversation(storage, "conv_a")
        short = Content(type="text", text="stays in the row")
        await storage.append_item(
            item("item_1", "conv_a", short, image(), Content(type="text", text=LONG)), durable=True
        )
        await storage.append_item(item("item_2", "conv_a", image()), durable=True)  # the same image again
        [first, second] = await storage.get_items("conv_a", ["item_1", "item_2"])
        assert first.item.content == [short, image(), Content(type="text", text=LONG)]
        assert second.item.content == [image()]
    finally:
        await storage.close()
    assert files(db) == sorted({blobs.address(IMAGE.encode()), blobs.address(LONG.encode())})
    for name in files(db):
        path = Path(blobs.directory_of(str(db))) / name
        assert blobs.address(path.read_bytes()) == name and path.stat().st_mode & 0o777 == 0o600
    [(payload,)] = sql(db, "SELECT payload FROM items WHERE item_id = 'item_2'")
    assert IMAGE not in str(payload) and f'"blob": "{blobs.address(IMAGE.encode())}"' in str(payload)
    assert sql(db, "SELECT count(*) FROM blob_refs") == [(3,)]


async def test_a_row_keeps_at_most_row_bytes_of_an_items_strings(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    arguments = json.dumps({"path": "big.txt", "content": "x" * 50_000})
    reasoning = [{"type": "reasoning", "encrypted_content": "e" * 30_000}]
    small = [Content(type="text", text="t" * 3000) for _ in range(3)]
    call = Item(
        id="item_call",
        conversation_id="conv_a",
        session_id="sess_conv_a",
        type=ItemType.TOOL_CALL,
        created_at=NOW,
        tool_call=ToolCall(call_id="call_1", name="write_file", arguments=arguments),
        provider_data=reasoning,
        content=small,
    )
    storage = await DuckDBStorage.open(str(db))
    try:
        await conversation(storage, "conv_a")
        await storage.append_item(call, durable=True)
        [logged] = await storage.get_items("conv_a", ["item_call"])
        assert logged.item == call
    finally:
        await storage.close()
    [(payload,)] = sql(db, "SELECT payload FROM items WHERE item_id = 'item_call'")
    assert len(str(payload)) <= codec.ROW_BYTES
    stored = json.loads(str(payload))
    assert set(stored["tool_call"]["arguments"]) == {"blob", "bytes"}  # the longest strings went
    assert set(stored["provider_data"]) == {"blob", "bytes"}
    assert [part["text"] for part in stored["content"]] == ["t" * 3000] * 3  # what fits stays


HELD_CHILD = """
import asyncio, base64, sys, threading
from openvaala_lsp.model import *
from openvaala_lsp.storage import writer
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

async def main(path, data):
    storage = await DuckDBStorage.open(path)
    now = utcnow()
    await storage.create_conversation(
        Conversation(id="conv_j", created_at=now, updated_at=now),
        Session(id="sess_j", conversation_id="conv_j", created_at=now),
    )
    writer._land = lambda cur, group: threading.Event().wait()  # DuckDB never gets the next batches
    it = Item(id="item_j", conversation_id="conv_j", session_id="sess_j", type=ItemType.USER_MESSAGE,
              created_at=now, content=[Content(type="image", mime_type="image/png", data=data)])
    ordinal = await storage.append_item(it, durable=True)
    print("ack", ordinal, flush=True)
    await asyncio.Event().wait()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def answered_then_killed(db: Path) -> str:
    """Runs HELD_CHILD until the journal answered its image, SIGKILLs it; returns the ack line."""
    child = subprocess.Popen(
        [sys.executable, "-c", HELD_CHILD, str(db), IMAGE], stdout=subprocess.PIPE, text=True, env=CHILD_ENV
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    child.wait()
    return line


async def test_an_image_the_journal_answered_survives_a_kill_before_duckdbs_commit(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert answered_then_killed(db) == "ack 1"
    assert sql(db, "SELECT count(*) FROM items") == [(0,)]  # only the journal and the file have it
    storage = await DuckDBStorage.open(str(db))
    try:
        [logged] = await storage.get_items("conv_j", ["item_j"])
        assert logged.item.content == [image()]
    finally:
        await storage.close()
    assert files(db) == [blobs.address(IMAGE.encode())]


async def test_files_no_row_names_are_swept_at_open_and_a_missing_one_reads_as_a_note(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    storage = await DuckDBStorage.open(str(db))
    await conversation(storage, "conv_a")
    await storage.append_item(item("item_1", "conv_a", image()), durable=True)
    await storage.close()
    directory = Path(blobs.directory_of(str(db)))
    stray = blobs.address(b"left by a kill between a file and its row")
    (directory / stray).write_bytes(b"left by a kill between a file and its row")
    (directory / f"{stray}.123.partial").write_bytes(b"half")
    (directory / "notes.txt").write_text("not ours to judge")

    storage = await DuckDBStorage.open(str(db))
    try:
        assert files(db) == sorted([blobs.address(IMAGE.encode()), "notes.txt"])
        (directory / blobs.address(IMAGE.encode())).unlink()  # gone by hand
        [logged] = await storage.get_items("conv_a", ["item_1"])
        [note] = logged.item.content or []
        assert note.type == "text" and "image unavailable" in (note.text or "")
        assert storage._load("../../../etc/passwd") is None  # a reference names a file of the directory
    finally:
        await storage.close()


async def test_a_batch_whose_files_cannot_be_written_fails_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = await DuckDBStorage.open(str(tmp_path / "store.duckdb"))
    try:
        await conversation(storage, "conv_a")

        def full(self: blobs.BlobStore, found: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(blobs.BlobStore, "store", full)
        with pytest.raises(OSError, match="No space"):
            await storage.append_item(item("item_1", "conv_a", image()), durable=True)
        monkeypatch.undo()
        assert await storage.get_items("conv_a", ["item_1"]) == []
        await storage.append_item(item("item_2", "conv_a", image()), durable=True)  # the store goes on
        assert [x.item.id for x in await storage.get_items("conv_a", ["item_2"])] == ["item_2"]
    finally:
        await storage.close()


async def test_a_file_a_batch_in_flight_needs_outlives_the_delete_of_another_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "store.duckdb"
    storage = await DuckDBStorage.open(str(db))
    try:
        await conversation(storage, "conv_a")
        await conversation(storage, "conv_b")
        await storage.append_item(item("item_a", "conv_a", image()), durable=True)
        # the delete's collection waits on DuckDB's thread, while conv_b's append of the same image is
        # journaled and answered: its file must stay, though no committed row names it yet
        collecting, go_on = threading.Event(), threading.Event()
        collect = blobs.BlobStore.collect

        def held(self: blobs.BlobStore, cur: object, candidates: object) -> int:
            collecting.set()
            go_on.wait(10)
            return collect(self, cur, candidates)  # type: ignore[arg-type]

        monkeypatch.setattr(blobs.BlobStore, "collect", held)
        deleting = asyncio.ensure_future(storage.delete_conversation("conv_a"))
        await asyncio.to_thread(collecting.wait, 10)
        await storage.append_item(item("item_b", "conv_b", image()), durable=True)
        go_on.set()
        assert await deleting
        [logged] = await storage.get_items("conv_b", ["item_b"])
        assert logged.item.content == [image()]
        assert files(db) == [blobs.address(IMAGE.encode())]
        await storage.delete_conversation("conv_b")
        assert files(db) == []
    finally:
        go_on.set()
        await storage.close()


async def test_a_database_in_memory_keeps_its_images_in_its_rows() -> None:
    storage = await DuckDBStorage.open(":memory:")
    try:
        await conversation(storage, "conv_a")
        await storage.append_item(item("item_1", "conv_a", image()), durable=True)
        [logged] = await storage.get_items("conv_a", ["item_1"])
        assert logged.item.content == [image()]
    finally:
        await storage.close()
