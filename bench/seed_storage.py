"""Seeds a storage file with large, realistic data, and times the list queries on it.

`seed_items` and `seed_conversations` write through `DuckDBStorage.bulk_write`, so the rows (ordinals,
payloads, columns) are exactly what the runtime's own calls would write. Both open and close the file.
Run `python bench/seed_storage.py [--index]` for the timings (median of 10, in ms).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    Conversation,
    ConversationId,
    ExecutorSettings,
    Item,
    ItemType,
    ModelCall,
    ModelRef,
    ModelSelection,
    Order,
    Session,
    TokenUsage,
    ToolCall,
    ToolResult,
    Turn,
    TurnStatus,
)
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

CHUNK = 20_000  # items per transaction while seeding
ITEMS_PER_TURN = 8
START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
WORDS = "parser lexer cache tests refactor docs build deploy config migrate index query render bug fix".split()
TEXT = "The change touches the module and its tests; the cursor logic keeps pages stable under inserts. " * 3


def _id(prefix: str, n: int) -> str:
    return f"{prefix}_{n:020x}"


def _conversation(n: int, rnd: random.Random, at: dt.datetime) -> tuple[Conversation, Session]:
    words = rnd.sample(WORDS, 3)
    conversation = Conversation(
        id=_id("conv", n),
        title=f"{words[0].title()} the {words[1]} and {words[2]} #{n}",
        agent_name="default",
        archived=rnd.random() < 0.2,
        created_at=at,
        updated_at=at,
        executor_settings=ExecutorSettings(executor_id="local", directory=f"/work/project{n % 7}"),
        model=ModelSelection(model=ModelRef(provider="anthropic", name="claude-sonnet-4"), reasoning_effort="medium"),
    )
    session = Session(
        id=_id("sess", n),
        conversation_id=conversation.id,
        agent_name="default",
        model=conversation.model or ModelSelection(),
        created_at=at,
    )
    return conversation, session


def _item(n: int, conversation_id: ConversationId, session_id: str, turn_id: str, at: dt.datetime) -> Item:
    kind = n % ITEMS_PER_TURN
    base = Item(
        id=_id("item", n),
        conversation_id=conversation_id,
        session_id=session_id,
        turn_id=turn_id,
        type=ItemType.ASSISTANT_MESSAGE,
        created_at=at,
    )
    if kind == 0:
        base.type = ItemType.USER_MESSAGE
        base.content = [Content(type="text", text=f"Please look at step {n}. {TEXT[:120]}")]
        base.from_ = Address(kind=AddressKind.USER)
    elif kind in (1, 4):
        base.type = ItemType.REASONING
        base.content = [Content(type="text", text=TEXT[:200])]
    elif kind in (2, 5):
        base.type = ItemType.TOOL_CALL
        base.tool_call = ToolCall(call_id=f"call_{n}", name="read_file", arguments=f'{{"path": "src/mod{n}.py"}}')
    elif kind in (3, 6):
        base.type = ItemType.TOOL_RESULT
        base.tool_result = ToolResult(call_id=f"call_{n - 1}", name="read_file")
        base.content = [Content(type="text", text=TEXT)]
    else:
        base.content = [Content(type="text", text=TEXT[:250])]
    return base


async def seed_items_async(
    storage_path: str,
    conversation_items: int = 100_000,
    other_conversations: int = 4,
    items_per_other: int = 25_000,
    seed: int = 0,
) -> ConversationId:
    """One conversation of `conversation_items` items, interleaved (as concurrent conversations are)
    with `other_conversations` of `items_per_other` items each; turns and model calls included.
    Returns the id of the big conversation."""
    rnd = random.Random(seed)
    storage = await DuckDBStorage.open(storage_path)
    try:
        base = rnd.randrange(1 << 40)
        sizes = [conversation_items] + [items_per_other] * other_conversations
        pairs = [_conversation(base + k, rnd, START) for k in range(len(sizes))]
        await storage.bulk_write(conversations=[c for c, _ in pairs], sessions=[s for _, s in pairs])
        # interleave: each slot picks a conversation in proportion to what it has left
        order = [k for k, size in enumerate(sizes) for _ in range(size)]
        rnd.shuffle(order)
        made = [0] * len(sizes)
        item_seq = base * 1_000_000
        for start in range(0, len(order), CHUNK):
            items: list[Item] = []
            turns: dict[str, Turn] = {}
            calls: list[ModelCall] = []
            for k in order[start : start + CHUNK]:
                conversation, session = pairs[k]
                n = made[k]
                made[k] += 1
                at = START + dt.timedelta(seconds=start + len(items))
                turn_id = _id("turn", (base + k) * 100_000 + n // ITEMS_PER_TURN)
                item_seq += 1
                items.append(_item(item_seq, conversation.id, session.id, turn_id, at))
                if n % ITEMS_PER_TURN == 0:
                    model = ModelRef(provider="anthropic", name="claude-sonnet-4")
                    usage = TokenUsage(input_tokens=12_000, cached_input_tokens=9_000, output_tokens=800)
                    usage.total_tokens = usage.input_tokens + usage.output_tokens
                    turns[turn_id] = Turn(
                        id=turn_id,
                        conversation_id=conversation.id,
                        session_id=session.id,
                        status=TurnStatus.COMPLETED,
                        started_at=at,
                        ended_at=at + dt.timedelta(seconds=30),
                        model=model,
                        usage=usage,
                    )
                    calls.append(
                        ModelCall(
                            id=_id("call", item_seq),
                            conversation_id=conversation.id,
                            session_id=session.id,
                            turn_id=turn_id,
                            provider=model.provider,
                            model=model.name,
                            started_at=at,
                            latency_ms=4_000,
                            first_token_ms=700,
                            usage=usage,
                            workspace=conversation.executor_settings.directory,
                        )
                    )
            last = {items[-1].conversation_id: items[-1].created_at}
            await storage.bulk_write(items=items, turns=turns.values(), model_calls=calls, activity=last)
        return pairs[0][0].id
    finally:
        await storage.close()


async def seed_conversations_async(storage_path: str, n: int = 50_000, seed: int = 1) -> list[ConversationId]:
    """`n` conversations with their main session; most have a last activity time, 20% are archived."""
    rnd = random.Random(seed)
    storage = await DuckDBStorage.open(storage_path)
    ids: list[ConversationId] = []
    try:
        base = rnd.randrange(1 << 40)
        for start in range(0, n, CHUNK):
            pairs = [
                _conversation(base + k, rnd, START + dt.timedelta(minutes=k))
                for k in range(start, min(n, start + CHUNK))
            ]
            activity = {
                c.id: c.created_at + dt.timedelta(minutes=rnd.randrange(100_000))
                for c, _ in pairs
                if rnd.random() < 0.9
            }
            await storage.bulk_write(
                conversations=[c for c, _ in pairs], sessions=[s for _, s in pairs], activity=activity
            )
            ids += [c.id for c, _ in pairs]
        return ids
    finally:
        await storage.close()


def seed_items(
    storage_path: str,
    conversation_items: int = 100_000,
    other_conversations: int = 4,
    items_per_other: int = 25_000,
) -> ConversationId:
    """Synchronous `seed_items_async` (run it outside any event loop)."""
    return asyncio.run(seed_items_async(storage_path, conversation_items, other_conversations, items_per_other))


def seed_conversations(storage_path: str, n: int = 50_000) -> list[ConversationId]:
    """Synchronous `seed_conversations_async` (run it outside any event loop)."""
    return asyncio.run(seed_conversations_async(storage_path, n))


async def _median_ms(call: Callable[[], Awaitable[object]], runs: int = 10) -> float:
    await call()  # warm: first-touch of the blocks
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def _timings(path: str, big: ConversationId, items: int) -> None:
    storage = await DuckDBStorage.open(path)
    try:
        cases: dict[str, Callable[[], Awaitable[object]]] = {
            "list_items last page asc (cursor n-100)": lambda: storage.list_items(
                big, session_id=None, cursor=items - 100, limit=100, order=Order.ASC
            ),
            "list_items first page desc": lambda: storage.list_items(
                big, session_id=None, cursor=None, limit=100, order=Order.DESC
            ),
            "list_items first page asc": lambda: storage.list_items(
                big, session_id=None, cursor=None, limit=100, order=Order.ASC
            ),
            "count_items": lambda: storage.count_items(big),
            "list_conversations desc, 50": lambda: storage.list_conversations(
                cursor=None, limit=50, order=Order.DESC, archived=None, query=None
            ),
            "list_conversations desc, archived=False": lambda: storage.list_conversations(
                cursor=None, limit=50, order=Order.DESC, archived=False, query=None
            ),
            "list_conversations query='parser'": lambda: storage.list_conversations(
                cursor=None, limit=50, order=Order.DESC, archived=None, query="Parser"
            ),
            "list_conversations query (no match)": lambda: storage.list_conversations(
                cursor=None, limit=50, order=Order.DESC, archived=None, query="zebra"
            ),
        }
        first = await storage.list_conversations(cursor=None, limit=500, order=Order.ASC, archived=None, query=None)
        middle = first.next_cursor
        cases["list_conversations asc after 500"] = lambda: storage.list_conversations(
            cursor=middle, limit=50, order=Order.ASC, archived=None, query=None
        )
        for name, call in cases.items():
            print(f"{name:45s} {await _median_ms(call):8.2f} ms")
    finally:
        await storage.close()


async def _append_throughput(path: str) -> None:
    storage = await DuckDBStorage.open(path)
    try:
        conversation, session = _conversation(1 << 41, random.Random(2), START)
        await storage.create_conversation(conversation, session)
        n = 20_000
        items = [_item(i, conversation.id, session.id, "turn_x", START) for i in range(n)]
        started = time.perf_counter()
        for item in items:
            await storage.append_item(item)
        await storage.flush()
        elapsed = time.perf_counter() - started
        print(f"append_item, not durable: {n / elapsed:,.0f} items/s ({n} items, flush included)")
        durable = [_item(n + i, conversation.id, session.id, "turn_x", START) for i in range(200)]
        latencies = []
        for item in durable:
            started = time.perf_counter()
            await storage.append_item(item, durable=True)
            latencies.append((time.perf_counter() - started) * 1000)
        print(f"append_item durable=True, sequential: median {statistics.median(latencies):.2f} ms per item")
        started = time.perf_counter()
        more = [_item(2 * n + i, conversation.id, session.id, "turn_x", START) for i in range(2000)]
        await asyncio.gather(*(storage.append_item(item, durable=True) for item in more))
        elapsed = time.perf_counter() - started
        print(f"append_item durable=True, 2000 concurrent: {2000 / elapsed:,.0f} items/s (group commit)")
    finally:
        await storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", action="store_true", help="add an ART index on items(conversation_id, ordinal)")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=50_000)
    parser.add_argument("--dir", help="where to put the file (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = str(Path(tmp) / "bench.duckdb")
        started = time.perf_counter()
        seed_conversations(path, args.conversations)
        print(f"seeded {args.conversations} conversations in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        big = seed_items(path, args.items)
        print(f"seeded {args.items} + 4 x 25000 interleaved items in {time.perf_counter() - started:.1f} s")
        if args.index:
            import duckdb

            con = duckdb.connect(path)
            con.execute("CREATE INDEX items_conversation_ordinal ON items (conversation_id, ordinal)")
            con.close()
            print("added ART index items(conversation_id, ordinal)")
        asyncio.run(_timings(path, big, args.items))
        asyncio.run(_append_throughput(path))


if __name__ == "__main__":
    main()
