"""The memory the history's worst conversations need: 200 images of 5 MiB in one conversation, and
10,000 items (tool outputs at their cap), read the way the runtime reads them (listItems pages under
the message limit, then the whole history as a restarted runtime loads it for a turn).

    python bench/store_memory.py [--images N] [--items N] [--turn]

1. DuckDB: the smallest `memory_limit` each conversation still reads under (tried 8 MB up), and what
   `duckdb_memory()` says DuckDB holds once it is read (at the memory limit openvaala runs with).
2. With `--turn`: the real `openvaala-lsp --standalone`, restarted on the file, runs a turn that
   sends the whole conversation to the scripted model server; its peak RSS (VmHWM).

Not a test: nothing here asserts; numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openvaala_lsp.model import Content, Conversation, Item, ItemType, Order, Session, Turn, TurnStatus, new_id
from openvaala_lsp.storage import opening
from openvaala_lsp.storage.codec import ROW_BYTES
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.interfaces import all_session_items
from openvaala_lsp.tools.truncate import DEFAULT_MAX_OUTPUT

MiB = 1024 * 1024
PAGE_BYTES = 64 * MiB - 64 * 1024  # what the runtime lets a listItems page take


async def seed(path: str, count: int, part: str) -> tuple[str, str]:
    """A conversation of `count` items, each with one `part`: "image" (5 MiB), "output" (a tool's output
    at its cap, which goes to a file) or "row" (the longest text a row keeps)."""
    now = dt.datetime.now(dt.UTC)
    storage = await DuckDBStorage.open(path)
    try:
        conversation = Conversation(id=new_id("conv"), created_at=now, updated_at=now)
        session = Session(id=new_id("sess"), conversation_id=conversation.id, created_at=now)
        await storage.create_conversation(conversation, session)
        turn = Turn(
            id=new_id("turn"),
            conversation_id=conversation.id,
            session_id=session.id,
            status=TurnStatus.COMPLETED,
            started_at=now,
            ended_at=now,
        )
        per_write = 10 if part == "image" else 1000
        for first in range(0, count, per_write):
            items = []
            for _ in range(min(per_write, count - first)):
                if part == "image":
                    data = base64.b64encode(os.urandom(5 * MiB)).decode()
                    content = [Content(type="image", mime_type="image/png", data=data)]
                else:
                    size = DEFAULT_MAX_OUTPUT if part == "output" else ROW_BYTES - 1024
                    content = [Content(type="text", text=os.urandom(size // 2).hex())]
                items.append(
                    Item(
                        id=new_id("item"),
                        conversation_id=conversation.id,
                        session_id=session.id,
                        turn_id=turn.id,
                        type=ItemType.USER_MESSAGE if part == "image" else ItemType.TOOL_RESULT,
                        created_at=now,
                        content=content,
                    )
                )
            await storage.bulk_write(turns=[turn] if first == 0 else [], items=items)
        return conversation.id, session.id
    finally:
        await storage.close()


async def read_all(path: str, conversation_id: str, session_id: str) -> tuple[int, int, int]:
    """Pages as listItems reads them (newest first), then the whole history; (pages, items, DuckDB's
    bytes held after)."""
    storage = await DuckDBStorage.open(path)
    try:
        pages = items = 0
        cursor = None
        while True:
            page = await storage.list_items(
                conversation_id, session_id=None, cursor=cursor, limit=500, order=Order.DESC, max_bytes=PAGE_BYTES
            )
            pages, items = pages + 1, items + len(page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        history = await all_session_items(storage, conversation_id, session_id)
        assert len(history) == items
        held = await storage._read(
            lambda cur: cur.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0]
        )
        return pages, items, int(held or 0)
    finally:
        await storage.close()


async def smallest_limit(path: str, conversation_id: str, session_id: str) -> str:
    default = opening.CONFIG["memory_limit"]
    try:
        for limit in ("8MB", "16MB", "32MB", "64MB", "128MB", "256MB", "1GB"):
            opening.CONFIG["memory_limit"] = limit
            try:
                await read_all(path, conversation_id, session_id)
                return limit
            except Exception as exc:  # DuckDB's OutOfMemoryException, or what it became
                print(f"    {limit}: {type(exc).__name__}: {str(exc)[:120]}")
        return "over 1GB"
    finally:
        opening.CONFIG["memory_limit"] = default


async def turn_peak(path: str, conversation_id: str) -> None:
    from fake_provider import ChatStream, FakeProviderServer
    from lsp_client import LspClient
    from turn_helpers import API_KEY, Session

    home = Path(path).parent
    with FakeProviderServer.start_in_thread() as provider:
        model = {
            "ref": {"provider": "fake", "name": "fake-model"},
            "api": "openai-chat",
            "baseUrl": provider.base_url("openai-chat"),
            "apiKeyEnv": "FAKE_API_KEY",
            "contextWindow": 100_000_000,
        }
        lsp = await LspClient.spawn(home, cwd=home, env={"FAKE_API_KEY": API_KEY}, args=["--standalone"])
        try:
            await lsp.initialize([home])
            await lsp.call("setDefinitions", {"models": [model]})
            session = await Session.open(lsp, conversation_id)
            provider.enqueue("openai-chat", ChatStream().text("seen").finish().response())
            started = time.monotonic()
            await session.submit("and now?")
            turn = await session.wait_event(lambda e: e["type"] == "turnCompleted", timeout=900)
            took = time.monotonic() - started
            status = await asyncio.to_thread(Path(f"/proc/{lsp.process.pid}/status").read_text)
            peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
            print(f"  turn after a restart: {turn['turn']['status']} in {took:.1f} s, peak RSS {int(peak) // 1024} MiB")
        finally:
            await lsp.shutdown()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--turn", action="store_true")
    parser.add_argument("--only", choices=["image", "output", "row"])
    args = parser.parse_args()
    for part, count in (("image", args.images), ("output", args.items), ("row", args.items)):
        if args.only not in (None, part):
            continue
        with tempfile.TemporaryDirectory() as directory:
            path = str(Path(directory) / "openvaala.duckdb")
            started = time.monotonic()
            conversation_id, session_id = await seed(path, count, part)
            print(f"{count} items with an {part} each: seeded in {time.monotonic() - started:.1f} s")
            pages, items, held = await read_all(path, conversation_id, session_id)
            print(f"  {pages} listItems pages, {items} items; DuckDB holds {held / MiB:.1f} MiB after")
            smallest = await smallest_limit(path, conversation_id, session_id)
            print(f"  the smallest memory_limit that reads it all: {smallest}")
            if args.turn:
                await turn_peak(path, conversation_id)


if __name__ == "__main__":
    asyncio.run(main())
