"""DuckDBStorage against real DuckDB files (no mocks): pagination, ordinals, durability, records."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import duckdb
import pytest

from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    Conversation,
    ErrorInfo,
    ExecutorSettings,
    ForkedFrom,
    Item,
    ItemStatus,
    ItemType,
    ModelCall,
    ModelPrice,
    ModelRef,
    ModelSelection,
    Order,
    PendingInput,
    Session,
    SessionInputMode,
    TokenUsage,
    ToolCall,
    ToolResult,
    Turn,
    TurnStatus,
)
from openvaala_lsp.storage import InvalidCursor, StorageClosedError, StorageError, StorageLockedError, writer
from openvaala_lsp.storage.codec import MODEL_CALL_COLUMNS, PENDING_INPUTS, TURN_COLUMNS, USAGE_COLUMNS, pending_row
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.migrations import LATEST_VERSION, migrate
from openvaala_lsp.storage.opening import CONFIG
from openvaala_lsp.storage.writer import Put

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
WAIT = 10.0  # a bound on waiting for the writer thread, never reached when all is well
NEVER = 3600.0  # a flush interval no test waits for: only durable writes and read barriers commit

CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def conversation(cid: str, *, title: str = "", archived: bool = False, created: float = 0) -> Conversation:
    return Conversation(id=cid, title=title, archived=archived, created_at=at(created), updated_at=at(created))


def session(sid: str, cid: str, *, created: float = 0) -> Session:
    return Session(id=sid, conversation_id=cid, created_at=at(created))


def item(iid: str, cid: str, sid: str, *, text: str = "hi", created: float = 0) -> Item:
    return Item(
        id=iid,
        conversation_id=cid,
        session_id=sid,
        turn_id="turn_1",
        type=ItemType.USER_MESSAGE,
        created_at=at(created),
        content=[Content(type="text", text=text)],
    )


def turn(tid: str, cid: str, sid: str, *, started: float = 0, status: TurnStatus = TurnStatus.RUNNING) -> Turn:
    return Turn(id=tid, conversation_id=cid, session_id=sid, started_at=at(started), status=status)


def model_call(mid: str, cid: str, sid: str, *, started: float = 0, tokens: int = 10) -> ModelCall:
    return ModelCall(
        id=mid,
        conversation_id=cid,
        session_id=sid,
        turn_id="turn_1",
        provider="anthropic",
        model="claude",
        started_at=at(started),
        usage=TokenUsage(input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1),
        workspace="/work/a",
    )


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "store.duckdb")


@pytest.fixture
async def storage(db_path: str) -> AsyncIterator[DuckDBStorage]:
    store = await DuckDBStorage.open(db_path)
    yield store
    await store.close()


async def make_conversation(storage: DuckDBStorage, cid: str, **kwargs: object) -> Session:
    sess = session(f"sess_{cid}", cid)
    await storage.create_conversation(conversation(cid, **kwargs), sess)  # type: ignore[arg-type]
    return sess


def sql(path: str, query: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    """Raw SQL on a closed store file."""
    con = duckdb.connect(path, config=CONFIG)
    try:
        return con.execute(query, params).fetchall()
    finally:
        con.close()


# Records round-trip


async def test_records_round_trip_with_utc_times(storage: DuckDBStorage) -> None:
    conv = Conversation(
        id="conv_a",
        title="T",
        agent_name="coder",
        created_at=dt.datetime(2025, 1, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        updated_at=at(5),
        executor_settings=ExecutorSettings(executor_id="local", directory="/w"),
        model=ModelSelection(model=ModelRef(provider="p", name="m"), reasoning_effort="high"),
        forked_from=ForkedFrom(conversation_id="conv_z", turn_id="turn_z"),
    )
    sess = Session(
        id="sess_a",
        conversation_id="conv_a",
        agent_name="coder",
        model=ModelSelection(model=ModelRef(provider="p", name="m")),
        created_at=at(1),
        parent_session_id="sess_p",
    )
    await storage.create_conversation(conv, sess)
    got = await storage.get_conversation("conv_a")
    assert got == conv
    assert got is not None and got.created_at.tzinfo is dt.UTC and got.created_at.hour == 12
    assert await storage.get_session("sess_a") == sess
    assert await storage.get_conversation("nope") is None and await storage.get_session("nope") is None

    # model=None and an empty selection stay distinct
    empty = conversation("conv_b")
    empty.model = ModelSelection()
    await storage.create_conversation(empty, session("sess_b", "conv_b"))
    got_empty = await storage.get_conversation("conv_b")
    assert got_empty is not None and got_empty.model == ModelSelection()
    await storage.update_conversation(attrs.evolve(empty, model=None, title="renamed"))
    assert await storage.get_conversation("conv_b") == attrs.evolve(empty, model=None, title="renamed")

    full = Turn(
        id="turn_a",
        conversation_id="conv_a",
        session_id="sess_a",
        status=TurnStatus.FAILED,
        started_at=at(2),
        ended_at=at(3),
        model=ModelRef(provider="p", name="m"),
        usage=TokenUsage(**{name: i + 1 for i, name in enumerate(USAGE_COLUMNS)}),
        error=ErrorInfo(kind="providerError", message="boom"),
    )
    await storage.save_turn(full)
    assert await storage.get_turns("conv_a", ["turn_x", "turn_a"]) == [full]

    call = attrs.evolve(model_call("mc_a", "conv_a", "sess_a"), first_token_ms=7, usage_estimated=True, error="e")
    await storage.append_model_call(call)
    assert await storage.list_model_calls("conv_a") == [call]


async def test_item_payload_round_trips_every_field(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    full = Item(
        id="item_full",
        conversation_id="conv_a",
        session_id=sess.id,
        turn_id="turn_1",
        type=ItemType.TOOL_CALL,
        status=ItemStatus.INTERRUPTED,
        created_at=dt.datetime(2025, 1, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        content=[Content(type="image", mime_type="image/png", data="aGk="), Content(type="text", text="é\u0000")],
        from_=Address(kind=AddressKind.SESSION, session_id="sess_x", name="helper"),
        tool_call=ToolCall(call_id="c1", name="shell", arguments="{not json"),
        tool_result=ToolResult(call_id="c1", name="shell", is_error=True),
        provider_data=[{"type": "thinking", "signature": "s", "nested": [1, None, {"ok": True}]}],
    )
    await storage.append_item(full, durable=True)
    (logged,) = await storage.get_items("conv_a", ["item_full"])
    assert logged.item == full and logged.item.created_at.tzinfo is dt.UTC


async def test_update_conversation_keeps_last_activity(storage: DuckDBStorage) -> None:
    await make_conversation(storage, "conv_a")
    await storage.touch_conversation("conv_a", at(50))
    await storage.update_conversation(conversation("conv_a", title="new"))
    page = await storage.list_conversations(cursor=None, limit=10, order=Order.ASC, archived=None, query=None)
    assert [(e.conversation.title, e.last_activity_at, e.running) for e in page.items] == [("new", at(50), False)]


async def test_updates_do_not_resurrect_a_deleted_conversation(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    assert await storage.delete_conversation("conv_a")
    await storage.update_conversation(conversation("conv_a", title="late"))
    await storage.update_session(sess)
    assert await storage.get_conversation("conv_a") is None and await storage.get_session(sess.id) is None


def test_model_call_and_turn_columns_cover_the_model() -> None:
    usage = {f.name for f in attrs.fields(TokenUsage)}
    assert set(USAGE_COLUMNS) == usage
    call_fields = {f.name for f in attrs.fields(ModelCall)} - {"usage", "price"}
    price = {f"price_{f.name}" for f in attrs.fields(ModelPrice)}
    assert set(MODEL_CALL_COLUMNS) == call_fields | usage | price
    assert usage <= set(TURN_COLUMNS)


# Item pagination


async def append_many(storage: DuckDBStorage, cid: str, sessions: list[str], n: int) -> list[str]:
    ids = []
    for i in range(n):
        iid = f"item_{cid}_{i}"
        ids.append(iid)
        await storage.append_item(item(iid, cid, sessions[i % len(sessions)]))
    return ids


async def ordinals_of(
    storage: DuckDBStorage, cid: str, *, limit: int, order: Order, session_id: str | None = None
) -> tuple[list[int], int]:
    """Walks every page; returns the ordinals in page order and the number of pages."""
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        page = await storage.list_items(cid, session_id=session_id, cursor=cursor, limit=limit, order=order)
        pages += 1
        assert page.items or cursor is None, "a cursor led to an empty page"
        seen += [logged.ordinal for logged in page.items]
        if page.next_cursor is None:
            return seen, pages
        cursor = page.next_cursor


async def test_list_items_empty_conversation(storage: DuckDBStorage) -> None:
    await make_conversation(storage, "conv_a")
    for order in Order:
        page = await storage.list_items("conv_a", session_id=None, cursor=None, limit=10, order=order)
        assert page.items == [] and page.next_cursor is None
    assert await storage.last_ordinal("conv_a") == 0
    assert await storage.count_items("conv_a") == 0


@pytest.mark.parametrize("n, limit, pages", [(5, 5, 1), (6, 5, 2), (10, 5, 2), (11, 5, 3), (1, 1, 1), (7, 500, 1)])
async def test_list_items_pages(storage: DuckDBStorage, n: int, limit: int, pages: int) -> None:
    sess = await make_conversation(storage, "conv_a")
    await make_conversation(storage, "conv_b")
    await append_many(storage, "conv_b", ["sess_conv_b"], 3)
    ids = await append_many(storage, "conv_a", [sess.id], n)
    asc, asc_pages = await ordinals_of(storage, "conv_a", limit=limit, order=Order.ASC)
    desc, desc_pages = await ordinals_of(storage, "conv_a", limit=limit, order=Order.DESC)
    assert asc == list(range(1, n + 1)) and asc_pages == pages
    assert desc == list(range(n, 0, -1)) and desc_pages == pages
    first = await storage.list_items("conv_a", session_id=None, cursor=None, limit=limit, order=Order.ASC)
    assert [logged.item.id for logged in first.items] == ids[:limit]
    assert first.items[0].item == item(ids[0], "conv_a", sess.id)


async def test_list_items_cursor_at_the_edges(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    await append_many(storage, "conv_a", [sess.id], 4)

    async def page(cursor: int, order: Order) -> list[int]:
        result = await storage.list_items("conv_a", session_id=None, cursor=cursor, limit=2, order=order)
        return [logged.ordinal for logged in result.items]

    assert await page(0, Order.ASC) == [1, 2]
    assert await page(4, Order.ASC) == []
    assert await page(3, Order.ASC) == [4]
    assert await page(1, Order.DESC) == []
    assert await page(5, Order.DESC) == [4, 3]
    assert await page(2, Order.DESC) == [1]
    assert await page(100, Order.DESC) == [4, 3]


async def test_list_items_session_filter(storage: DuckDBStorage) -> None:
    main = await make_conversation(storage, "conv_a")
    await storage.create_session(session("sess_sub", "conv_a"))
    # the sub-session holds every 7th item: its pages are sparse windows of the ordinals
    for i in range(60):
        await storage.append_item(item(f"item_{i}", "conv_a", "sess_sub" if i % 7 == 0 else main.id))
    sub = [i + 1 for i in range(60) if i % 7 == 0]
    for limit in (1, 2, 3, 100):
        assert (await ordinals_of(storage, "conv_a", limit=limit, order=Order.ASC, session_id="sess_sub"))[0] == sub
        assert (await ordinals_of(storage, "conv_a", limit=limit, order=Order.DESC, session_id="sess_sub"))[0] == sub[
            ::-1
        ]
    main_ordinals, _ = await ordinals_of(storage, "conv_a", limit=4, order=Order.ASC, session_id=main.id)
    assert main_ordinals == [o for o in range(1, 61) if o not in sub]
    assert await storage.count_items("conv_a", "sess_sub") == len(sub)
    assert await storage.count_items("conv_a") == 60


async def test_get_items_in_requested_order(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    ids = await append_many(storage, "conv_a", [sess.id], 5)
    got = await storage.get_items("conv_a", [ids[3], "item_unknown", ids[0]])
    assert [(logged.ordinal, logged.item.id) for logged in got] == [(4, ids[3]), (1, ids[0])]
    assert await storage.get_items("conv_b", [ids[0]]) == []
    assert await storage.get_items("conv_a", []) == []


# Record pagination


async def test_list_conversations_pages_filters_and_cursors(storage: DuckDBStorage) -> None:
    titles = ["100% done", "100 percent", "a_b", "axb", "Alpha", "ALPHABET", "beta", "gamma", "delta", "eps"]
    for i, title in enumerate(titles):
        await make_conversation(storage, f"conv_{i:02d}", title=title, archived=i % 3 == 0, created=i)
    # activity reorders some; conv_08 and conv_09 tie on it and fall back to id order
    await storage.touch_conversation("conv_00", at(100))
    await storage.touch_conversation("conv_08", at(50))
    await storage.touch_conversation("conv_09", at(50))
    expected = [f"conv_{i:02d}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 9, 0)]

    async def walk(limit: int, order: Order, archived: bool | None = None, query: str | None = None) -> list[str]:
        seen: list[str] = []
        cursor = None
        while True:
            page = await storage.list_conversations(
                cursor=cursor, limit=limit, order=order, archived=archived, query=query
            )
            assert page.items or cursor is None
            seen += [entry.conversation.id for entry in page.items]
            if page.next_cursor is None:
                return seen
            cursor = page.next_cursor

    for limit in (1, 3, 10, 11):
        assert await walk(limit, Order.ASC) == expected
        assert await walk(limit, Order.DESC) == expected[::-1]
    exact = await storage.list_conversations(cursor=None, limit=10, order=Order.ASC, archived=None, query=None)
    assert len(exact.items) == 10 and exact.next_cursor is None
    assert await walk(2, Order.ASC, archived=True) == [c for c in expected if int(c[-2:]) % 3 == 0]
    assert await walk(2, Order.ASC, archived=False) == [c for c in expected if int(c[-2:]) % 3 != 0]
    # `%` and `_` are literal; matching is case-insensitive
    assert await walk(5, Order.ASC, query="100%") == ["conv_00"]
    assert await walk(5, Order.ASC, query="a_b") == ["conv_02"]
    assert await walk(5, Order.ASC, query="alpha") == ["conv_04", "conv_05"]
    assert await walk(5, Order.ASC, query="ALPHA", archived=True) == []
    assert await walk(5, Order.ASC, query="zzz") == []


@pytest.mark.parametrize("cursor", ["", "!!!", "bm90IGEgY3Vyc29y", "YXxifGM", "dHwxfGNvbnY", "Y3xub3RhbnVtYmVyfGlk"])
async def test_malformed_cursors(storage: DuckDBStorage, cursor: str) -> None:
    await make_conversation(storage, "conv_a")
    with pytest.raises(InvalidCursor, match=r"^cursor: malformed$"):
        await storage.list_conversations(cursor=cursor, limit=5, order=Order.ASC, archived=None, query=None)
    with pytest.raises(ValueError, match="cursor: malformed"):
        await storage.list_sessions("conv_a", cursor=cursor, limit=5, order=Order.ASC)


async def test_cursor_of_another_list_is_malformed(storage: DuckDBStorage) -> None:
    for i in range(3):
        await make_conversation(storage, f"conv_{i}")
    page = await storage.list_conversations(cursor=None, limit=1, order=Order.ASC, archived=None, query=None)
    assert page.next_cursor is not None
    with pytest.raises(InvalidCursor):
        await storage.list_turns("conv_0", session_id=None, cursor=page.next_cursor, limit=1, order=Order.ASC)


async def test_list_sessions_and_turns(storage: DuckDBStorage) -> None:
    main = await make_conversation(storage, "conv_a")
    for i in range(4):
        await storage.create_session(session(f"sess_{i}", "conv_a", created=i + 1))
    await storage.update_session(attrs.evolve(session("sess_0", "conv_a", created=1), agent_name="x"))
    sessions = await storage.list_sessions("conv_a", cursor=None, limit=3, order=Order.ASC)
    assert [s.id for s in sessions.items] == [main.id, "sess_0", "sess_1"] and sessions.items[1].agent_name == "x"
    rest = await storage.list_sessions("conv_a", cursor=sessions.next_cursor, limit=3, order=Order.ASC)
    assert [s.id for s in rest.items] == ["sess_2", "sess_3"] and rest.next_cursor is None

    for i in range(5):
        await storage.save_turn(turn(f"turn_{i}", "conv_a", "sess_0" if i % 2 else main.id, started=i))
    page = await storage.list_turns("conv_a", session_id=None, cursor=None, limit=2, order=Order.DESC)
    assert [t.id for t in page.items] == ["turn_4", "turn_3"]
    page = await storage.list_turns("conv_a", session_id=None, cursor=page.next_cursor, limit=2, order=Order.DESC)
    assert [t.id for t in page.items] == ["turn_2", "turn_1"]
    page = await storage.list_turns("conv_a", session_id="sess_0", cursor=None, limit=2, order=Order.ASC)
    assert [t.id for t in page.items] == ["turn_1", "turn_3"] and page.next_cursor is None


# Ordinals


async def test_concurrent_appends_get_unique_dense_ordinals(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path)
    for cid in ("conv_a", "conv_b"):
        await make_conversation(storage, cid)
    jobs = [
        storage.append_item(item(f"item_{cid}_{i}", cid, f"sess_{cid}"), durable=i % 5 == 0)
        for i in range(40)
        for cid in ("conv_a", "conv_b")
    ]
    results = await asyncio.gather(*jobs)
    for cid in ("conv_a", "conv_b"):
        mine = [ordinal for ordinal, job in zip(results, range(80), strict=True) if (job % 2 == 0) == (cid == "conv_a")]
        assert mine == list(range(1, 41))
        listed = await storage.list_items(cid, session_id=None, cursor=None, limit=100, order=Order.ASC)
        assert [(x.ordinal, x.item.id) for x in listed.items] == [(i + 1, f"item_{cid}_{i}") for i in range(40)]
    await storage.close()

    # after a restart, and concurrently on a conversation whose last ordinal is not loaded yet
    storage = await DuckDBStorage.open(db_path)
    again = await asyncio.gather(*(storage.append_item(item(f"item_r{i}", "conv_a", "sess_conv_a")) for i in range(5)))
    assert again == [41, 42, 43, 44, 45]
    # deleting another conversation changes nothing
    assert await storage.delete_conversation("conv_b") is True
    assert await storage.append_item(item("item_after", "conv_a", "sess_conv_a"), durable=True) == 46
    assert await storage.last_ordinal("conv_a") == 46
    assert await storage.last_ordinal("conv_b") == 0
    await storage.close()


async def test_bulk_write_continues_ordinals(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    await storage.append_item(item("item_0", "conv_a", sess.id))
    items = [item(f"item_{i}", "conv_a", sess.id) for i in range(1, 4)]
    ordinals = await storage.bulk_write(items=items, input_ids={"item_2": "in_2"})
    assert ordinals == [2, 3, 4]
    assert await storage.find_input("conv_a", "in_2") == "item_2"
    assert await storage.append_item(item("item_9", "conv_a", sess.id)) == 5


# Durability and crashes

CHILD = """
import asyncio, sys
from openvaala_lsp.model import *
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

async def main(path, run):
    storage = await DuckDBStorage.open(path)
    if await storage.get_conversation("conv_k") is None:
        now = utcnow()
        await storage.create_conversation(
            Conversation(id="conv_k", created_at=now, updated_at=now),
            Session(id="sess_k", conversation_id="conv_k", created_at=now),
        )
    n = 0
    while True:
        n += 1
        now = utcnow()
        tid = f"turn_{run}_{n}"
        # non-durable noise in the same batches
        await storage.save_turn(Turn(id=tid, conversation_id="conv_k", session_id="sess_k", started_at=now))
        await storage.append_model_call(ModelCall(id=f"mc_{run}_{n}", conversation_id="conv_k", session_id="sess_k",
                                                  turn_id=tid, provider="p", model="m", started_at=now))
        it = Item(id=f"item_{run}_{n}", conversation_id="conv_k", session_id="sess_k", type=ItemType.USER_MESSAGE,
                  created_at=now, content=[Content(type="text", text="x" * 200)])
        ordinal = await storage.append_item(it, durable=True)
        await storage.save_turn(Turn(id=tid, conversation_id="conv_k", session_id="sess_k", started_at=now,
                                     status=TurnStatus.COMPLETED), durable=True)
        print(f"ack {ordinal} {it.id} {tid}", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def run_and_kill(path: str, run: str, acks: int) -> list[tuple[int, str, str]]:
    """Runs the writer child until it acknowledged `acks` writes, SIGKILLs it; returns every ack it printed."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, path, run], stdout=subprocess.PIPE, text=True, env=CHILD_ENV)
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        if len(lines) >= acks:
            break
    child.send_signal(signal.SIGKILL)
    lines += child.stdout.read().splitlines()  # acks already in the pipe were acknowledged too
    child.wait()
    assert child.returncode == -signal.SIGKILL
    result = []
    for line in lines:
        _, ordinal, iid, tid = line.split()
        result.append((int(ordinal), iid, tid))
    return result


async def test_acknowledged_writes_survive_sigkill_and_ordinals_continue(db_path: str) -> None:
    first = run_and_kill(db_path, "r1", 25)
    second = run_and_kill(db_path, "r2", 25)  # the second run reopens the file the first one left
    acked = first + second
    ordinals = [ordinal for ordinal, _, _ in acked]
    assert ordinals[: len(first)] == list(range(1, len(first) + 1))
    # the second run goes on from the first's last durable item: the one it acknowledged, or one it
    # made durable (the journal) but was killed before acknowledging
    assert ordinals[len(first)] - ordinals[len(first) - 1] in (1, 2)
    assert ordinals[len(first) :] == list(range(ordinals[len(first)], ordinals[len(first)] + len(second)))

    storage = await DuckDBStorage.open(db_path)
    try:
        logged = await storage.get_items("conv_k", [iid for _, iid, _ in acked])
        assert [(x.ordinal, x.item.id) for x in logged] == [(o, iid) for o, iid, _ in acked]
        turns = await storage.get_turns("conv_k", [tid for _, _, tid in acked])
        assert len(turns) == len(acked) and {t.status for t in turns} == {TurnStatus.COMPLETED}
        stored_max = await storage.last_ordinal("conv_k")
        assert stored_max >= ordinals[-1]
        fresh = await storage.append_item(item("item_fresh", "conv_k", "sess_k"), durable=True)
        assert fresh == stored_max + 1
        everything, _ = await ordinals_of(storage, "conv_k", limit=500, order=Order.ASC)
        assert everything == list(range(1, fresh + 1))
    finally:
        await storage.close()


# The journal answers a durable write before DuckDB commits it: a kill in between loses nothing
HELD_CHILD = """
import asyncio, sys, threading
from openvaala_lsp.model import *
from openvaala_lsp.storage import writer
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

async def main(path):
    storage = await DuckDBStorage.open(path)
    now = utcnow()
    await storage.create_conversation(
        Conversation(id="conv_j", created_at=now, updated_at=now),
        Session(id="sess_j", conversation_id="conv_j", created_at=now),
    )
    writer._land = lambda cur, group: threading.Event().wait()  # DuckDB never gets the next batches
    await storage.save_turn(Turn(id="turn_j", conversation_id="conv_j", session_id="sess_j", started_at=now))
    for n in range(1, 4):  # each answered by a journal record of its own
        it = Item(id=f"item_j{n}", conversation_id="conv_j", session_id="sess_j", type=ItemType.USER_MESSAGE,
                  created_at=now, content=[Content(type="text", text=f"kept {n}")])
        ordinal = await storage.append_item(it, durable=True)
    print("ack", ordinal, flush=True)
    await asyncio.Event().wait()

asyncio.run(main(sys.argv[1]))
"""


def answered_then_killed(path: str) -> str:
    """Runs HELD_CHILD until the journal answered its item, SIGKILLs it; returns the ack line."""
    child = subprocess.Popen([sys.executable, "-c", HELD_CHILD, path], stdout=subprocess.PIPE, text=True, env=CHILD_ENV)
    assert child.stdout is not None
    line = child.stdout.readline()
    child.send_signal(signal.SIGKILL)
    child.wait()
    return line.strip()


async def test_writes_the_journal_answered_survive_a_kill_before_duckdbs_commit(db_path: str) -> None:
    assert answered_then_killed(db_path) == "ack 3"
    assert sql(db_path, "SELECT count(*) FROM items") == [(0,)]  # DuckDB never had them
    for next_ordinal in (4, 5):  # replayed at the first open, and only then
        storage = await DuckDBStorage.open(db_path)
        try:
            logged = await storage.get_items("conv_j", ["item_j1", "item_j2", "item_j3"])
            assert [(x.ordinal, x.item.content[0].text) for x in logged] == [
                (1, "kept 1"),
                (2, "kept 2"),
                (3, "kept 3"),
            ]
            assert [t.id for t in await storage.get_turns("conv_j", ["turn_j"])] == ["turn_j"]  # its batch's too
            assert await storage.append_item(item("item_next", "conv_j", "sess_j"), durable=True) == next_ordinal
        finally:
            await storage.close()
        assert sql(db_path, "SELECT count(*) FROM items WHERE item_id LIKE 'item_j%'") == [(3,)]


@pytest.fixture
async def conv_a(db_path: str) -> AsyncIterator[tuple[DuckDBStorage, Session]]:
    """A store that commits only when asked (NEVER flushes on its own), with conversation conv_a."""
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        yield storage, await make_conversation(storage, "conv_a")
    finally:
        await storage.close()


@attrs.define
class HeldDuckDB:
    """DuckDB's commits of journaled batches, held until `release`; `groups` has each one's batch count."""

    entered: threading.Event = attrs.Factory(threading.Event)  # the first commit is held
    released: threading.Event = attrs.Factory(threading.Event)
    groups: list[int] = attrs.Factory(list)

    def release(self) -> None:
        self.released.set()


async def hold_duckdb(storage: DuckDBStorage, monkeypatch: pytest.MonkeyPatch, *, held: bool = True) -> HeldDuckDB:
    """From now on DuckDB's commits of journaled batches wait for `release()` (at once if not
    `held`); what was written before is in DuckDB already."""
    await storage.list_conversations(cursor=None, limit=1, order=Order.ASC, archived=None, query=None)
    hold, land = HeldDuckDB(), writer._land
    if not held:
        hold.release()

    def held_land(cur: duckdb.DuckDBPyConnection, group: list[writer._Batch]) -> None:
        hold.groups.append(len(group))
        hold.entered.set()
        hold.released.wait(WAIT)
        land(cur, group)

    monkeypatch.setattr(writer, "_land", held_land)
    return hold


async def test_reads_wait_for_what_the_journal_answered(
    conv_a: tuple[DuckDBStorage, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, sess = conv_a
    duckdb_held = await hold_duckdb(storage, monkeypatch)
    assert await storage.append_item(item("item_1", "conv_a", sess.id), durable=True) == 1  # answered
    await storage.flush()  # durable already: nothing to wait for
    # the next batches are journaled while DuckDB is still at the first
    assert await storage.append_item(item("item_2", "conv_a", sess.id), durable=True) == 2
    assert await storage.append_item(item("item_3", "conv_a", sess.id), durable=True) == 3
    reads = [
        asyncio.ensure_future(storage.get_items("conv_a", ["item_1"])),
        asyncio.ensure_future(storage.query("SELECT count(*) FROM items", [], 10)),
    ]
    await asyncio.sleep(0.2)
    assert not any(read.done() for read in reads)  # DuckDB has not committed it yet
    duckdb_held.release()
    logged, counted = await asyncio.gather(*reads)
    assert [x.item.id for x in logged] == ["item_1"] and counted.rows == [[3]]


async def test_the_journal_answers_no_further_ahead_of_duckdb_than_max_in_flight(
    conv_a: tuple[DuckDBStorage, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, sess = conv_a
    monkeypatch.setattr(writer, "MAX_IN_FLIGHT", 3)
    duckdb_held = await hold_duckdb(storage, monkeypatch)
    await storage.append_item(item("item_1", "conv_a", sess.id), durable=True)
    assert await asyncio.to_thread(duckdb_held.entered.wait, WAIT)  # DuckDB holds it
    writes = []
    for i in range(2, 6):  # one at a time: each its own batch
        writes.append(asyncio.ensure_future(storage.append_item(item(f"item_{i}", "conv_a", sess.id), durable=True)))
        await asyncio.sleep(0.05)
    assert [w.done() for w in writes] == [True, True, False, False]  # three batches in flight at most
    duckdb_held.release()
    assert await asyncio.gather(*writes) == [2, 3, 4, 5]


async def test_when_duckdb_fails_behind_the_journal_the_writer_stops_and_the_next_open_has_it(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    sess = await make_conversation(storage, "conv_a")
    await hold_duckdb(storage, monkeypatch, held=False)  # what came before is in DuckDB

    def failing_land(cur: duckdb.DuckDBPyConnection, group: list[writer._Batch]) -> None:
        raise duckdb.IOException("disk gone")  # not a refusal of what was written: DuckDB itself fails

    monkeypatch.setattr(writer, "_land", failing_land)
    assert await storage.append_item(item("item_1", "conv_a", sess.id), durable=True) == 1  # the journal has it
    await asyncio.to_thread(storage._writer._thread.join, WAIT)  # the DuckDB thread gave up
    with pytest.raises(StorageError, match="writer stopped"):  # a read would miss item_1
        await storage.get_items("conv_a", ["item_1"])
    with pytest.raises(StorageError, match="writer stopped"):
        await storage.append_item(item("item_2", "conv_a", sess.id), durable=True)
    with pytest.raises(duckdb.IOException):  # the writer's own error
        await storage.close()
    monkeypatch.undo()
    storage = await DuckDBStorage.open(db_path)
    try:
        assert [x.item.id for x in await storage.get_items("conv_a", ["item_1", "item_2"])] == ["item_1"]
    finally:
        await storage.close()


async def test_journaled_batches_wait_to_commit_together_until_a_read_needs_them(
    conv_a: tuple[DuckDBStorage, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, sess = conv_a
    monkeypatch.setattr(writer, "LAND_DELAY", 3600.0)
    groups = (await hold_duckdb(storage, monkeypatch, held=False)).groups
    for i in range(1, 4):
        assert await storage.append_item(item(f"item_{i}", "conv_a", sess.id), durable=True) == i
    assert groups == []  # answered by the journal; DuckDB waits for more
    async with asyncio.timeout(WAIT):  # the read does not wait out LAND_DELAY
        logged = await storage.get_items("conv_a", ["item_1", "item_2", "item_3"])
    assert len(logged) == 3 and groups == [3]  # one DuckDB transaction for the three


async def test_sql_after_a_kill_sees_what_the_journal_answered(db_path: str) -> None:
    assert answered_then_killed(db_path) == "ack 3"
    storage = await DuckDBStorage.open(db_path)
    try:
        result = await storage.query("SELECT item_id FROM items ORDER BY ordinal", [], 10)
    finally:
        await storage.close()
    assert result.rows == [["item_j1"], ["item_j2"], ["item_j3"]]


async def test_a_journal_is_replayed_into_its_own_database_only(tmp_path: Path) -> None:
    path = str(tmp_path / "a.duckdb")
    assert answered_then_killed(path) == "ack 3"
    other = str(tmp_path / "b.duckdb")
    storage = await DuckDBStorage.open(other)
    await storage.close()
    shutil.copyfile(f"{path}.journal", f"{other}.journal")  # beside a database that never wrote it
    for gone in (path, f"{path}.wal"):  # and the file it belonged to replaced by a new one
        if os.path.exists(gone):
            os.remove(gone)
    for left in (path, other):
        storage = await DuckDBStorage.open(left)
        try:
            assert await storage.get_conversation("conv_j") is None
            assert await storage.get_items("conv_j", ["item_j1"]) == []
        finally:
            await storage.close()


async def test_the_journal_ends_at_a_damaged_record(db_path: str) -> None:
    assert answered_then_killed(db_path) == "ack 3"
    journal_file = Path(f"{db_path}.journal")
    data = journal_file.read_bytes()
    end = len(data.rstrip(b"\0"))  # the records, then the zeros the file grows by (a record ends with b".")
    # the last record's last byte never written: as if its write never finished
    journal_file.write_bytes(data[: end - 1] + bytes(len(data) - end + 1))
    storage = await DuckDBStorage.open(db_path)
    try:
        logged = await storage.get_items("conv_j", ["item_j1", "item_j2", "item_j3"])
        assert [x.item.id for x in logged] == ["item_j1", "item_j2"]
        assert await storage.get_conversation("conv_j") is not None  # committed before the held batches
        assert await storage.append_item(item("item_next", "conv_j", "sess_j"), durable=True) == 3
    finally:
        await storage.close()


async def test_read_your_non_durable_writes(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        ordinal = await storage.append_item(item("item_1", "conv_a", sess.id))
        await storage.save_turn(turn("turn_1", "conv_a", sess.id))
        await storage.touch_conversation("conv_a", at(99))
        await storage.append_model_call(model_call("mc_1", "conv_a", sess.id))
        page = await storage.list_items("conv_a", session_id=None, cursor=None, limit=10, order=Order.ASC)
        assert [x.ordinal for x in page.items] == [ordinal]
        assert [t.id for t in await storage.get_turns("conv_a", ["turn_1"])] == ["turn_1"]
        assert [c.id for c in await storage.list_model_calls("conv_a")] == ["mc_1"]
        convs = await storage.list_conversations(cursor=None, limit=1, order=Order.ASC, archived=None, query=None)
        assert convs.items[0].last_activity_at == at(99)
    finally:
        await storage.close()


async def test_close_commits_pending_writes(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    sess = await make_conversation(storage, "conv_a")
    await storage.append_item(item("item_1", "conv_a", sess.id))
    await storage.close()
    await storage.close()  # idempotent
    with pytest.raises(StorageClosedError):
        await storage.get_conversation("conv_a")
    with pytest.raises(StorageClosedError):
        await storage.append_item(item("item_2", "conv_a", sess.id))
    assert not await asyncio.to_thread(Path(db_path + ".wal").exists)  # checkpointed
    assert sql(db_path, "SELECT ordinal, item_id FROM items") == [(1, "item_1")]


async def test_record_updates_in_one_batch_coalesce_to_the_last(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        for i in range(30):  # queued together: one upsert batch with 30 rows of one key
            await storage.save_turn(
                attrs.evolve(turn("turn_1", "conv_a", sess.id), usage=TokenUsage(output_tokens=i), ended_at=at(i))
            )
        await storage.save_turn(
            attrs.evolve(turn("turn_1", "conv_a", sess.id), status=TurnStatus.COMPLETED, ended_at=at(31)),
            durable=True,
        )
        for i in range(5):
            await storage.touch_conversation("conv_a", at(10 + i))
        (got,) = await storage.get_turns("conv_a", ["turn_1"])
        assert got.status is TurnStatus.COMPLETED and got.ended_at == at(31) and got.usage == TokenUsage()
        convs = await storage.list_conversations(cursor=None, limit=1, order=Order.ASC, archived=None, query=None)
        assert convs.items[0].last_activity_at == at(14)
    finally:
        await storage.close()


async def test_a_failed_batch_fails_its_waiters_and_the_store_recovers() -> None:
    # in memory there is no journal: the batch's waiters wait for DuckDB's commit and get its error
    storage = await DuckDBStorage.open(":memory:", flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        await storage.save_turn(turn("turn_lost", "conv_a", sess.id))  # queued in the batch that fails
        for i in range(1, 4):
            await storage.append_item(item(f"item_lost_{i}", "conv_a", sess.id))
        with pytest.raises(duckdb.ConstraintException):
            await storage.create_conversation(bad_conversation(), session("sess_bad", "conv_bad"))
        assert await storage.get_conversation("conv_bad") is None
        assert await storage.get_session("sess_bad") is None
        assert await storage.get_turns("conv_a", ["turn_lost"]) == []  # rolled back with its batch, not half-written
        await storage.save_turn(turn("turn_ok", "conv_a", sess.id), durable=True)
        assert [t.id for t in await storage.get_turns("conv_a", ["turn_ok"])] == ["turn_ok"]
        # ordinals given to the lost appends are not reused; pages skip the gap
        assert await storage.append_item(item("item_4", "conv_a", sess.id)) == 4
        for i in range(5, 9):
            await storage.append_item(item(f"item_{i}", "conv_a", sess.id))
        for limit in (1, 2, 3):
            assert (await ordinals_of(storage, "conv_a", limit=limit, order=Order.ASC))[0] == [4, 5, 6, 7, 8]
            assert (await ordinals_of(storage, "conv_a", limit=limit, order=Order.DESC))[0] == [8, 7, 6, 5, 4]
    finally:
        await storage.close()


async def test_a_journaled_batch_duckdb_refuses_loses_only_the_refused_write(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the journal answered the batch before DuckDB saw it: DuckDB's refusal (a bug in what was
    # written) drops that one write, logged; the rest of the batch lands and the store goes on
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        await storage.save_turn(turn("turn_kept", "conv_a", sess.id))  # queued in the same batch
        for i in range(1, 4):
            await storage.append_item(item(f"item_{i}", "conv_a", sess.id))
        await storage.create_conversation(bad_conversation(), session("sess_bad", "conv_bad"))
        assert await storage.get_conversation("conv_bad") is None
        assert await storage.get_session("sess_bad") is None  # the refused write's other half
        assert [t.id for t in await storage.get_turns("conv_a", ["turn_kept"])] == ["turn_kept"]
        assert (await ordinals_of(storage, "conv_a", limit=10, order=Order.ASC))[0] == [1, 2, 3]
        assert "dropped 2 writes DuckDB refuses" in caplog.text and "conv_bad" in caplog.text
        await storage.save_turn(turn("turn_ok", "conv_a", sess.id), durable=True)
        assert [t.id for t in await storage.get_turns("conv_a", ["turn_ok"])] == ["turn_ok"]
    finally:
        await storage.close()
    storage = await DuckDBStorage.open(db_path)  # nothing is replayed twice
    try:
        assert (await ordinals_of(storage, "conv_a", limit=10, order=Order.ASC))[0] == [1, 2, 3]
    finally:
        await storage.close()


async def test_journaled_batches_duckdb_takes_together_are_refused_one_by_one(
    db_path: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        duckdb_held = await hold_duckdb(storage, monkeypatch)
        await storage.append_item(item("item_1", "conv_a", sess.id), durable=True)  # DuckDB holds this one
        assert await asyncio.to_thread(duckdb_held.entered.wait, WAIT)
        await storage.create_conversation(bad_conversation(), session("sess_bad", "conv_bad"))
        await storage.append_item(item("item_2", "conv_a", sess.id), durable=True)
        duckdb_held.release()
        assert (await ordinals_of(storage, "conv_a", limit=10, order=Order.ASC))[0] == [1, 2]
        assert await storage.get_session("sess_bad") is None
        # the two answered while DuckDB was held in one transaction, then one by one
        assert duckdb_held.groups == [1, 2, 1, 1], duckdb_held.groups
        assert "dropped 2 writes DuckDB refuses" in caplog.text
    finally:
        await storage.close()
    assert sql(db_path, "SELECT seq FROM storage_journal") == [(4,)]  # every record is in DuckDB


def bad_conversation() -> Conversation:
    bad = conversation("conv_bad")
    bad.title = None  # type: ignore[assignment]  # violates NOT NULL at commit time
    return bad


# Deletes, pending inputs, inputs, interrupts


async def test_delete_conversation_removes_every_row(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path)
    for cid in ("conv_a", "conv_b"):
        sess = await make_conversation(storage, cid)
        await storage.create_session(session(f"sess_{cid}_2", cid))
        await storage.save_turn(turn(f"turn_{cid}", cid, sess.id))
        await storage.save_pending_input(PendingInput(item=item(f"pend_{cid}", cid, sess.id), input_id="in"))
        await storage.append_item(item(f"item_{cid}", cid, sess.id))
        await storage.append_model_call(model_call(f"mc_{cid}", cid, sess.id))
    await storage.append_item(item("item_same_batch", "conv_a", "sess_conv_a"))  # queued, not yet committed
    assert await storage.delete_conversation("conv_a") is True
    assert await storage.delete_conversation("conv_a") is False
    assert await storage.delete_conversation("conv_never") is False
    assert await storage.get_conversation("conv_a") is None
    await storage.close()

    tables = {"conversations": "id", "sessions": "conversation_id", "turns": "conversation_id"}
    tables |= {"pending_inputs": "conversation_id", "items": "conversation_id", "model_calls": "conversation_id"}
    for table, column in tables.items():
        counts = {key: n for key, n in sql(db_path, f"SELECT {column}, count(*) FROM {table} GROUP BY ALL")}
        assert "conv_a" not in counts, table
        assert counts["conv_b"] == (2 if table == "sessions" else 1), table


async def test_a_new_record_deleted_in_its_batch_never_reaches_the_table(db_path: str) -> None:
    """A submit's pending input and the turn that takes it at once often share one commit: the input
    is written `new` and removed in the same batch, so neither statement runs; new rows are inserted,
    later saves of them replace them."""
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        taken = PendingInput(item=item("pend_taken", "conv_a", sess.id))
        kept = PendingInput(item=item("pend_kept", "conv_a", sess.id))
        await storage.save_turn(turn("turn_1", "conv_a", sess.id), new=True)
        for pending in (taken, kept):
            await storage._write([Put(PENDING_INPUTS, pending_row(pending), new=True)], durable=False)
        await storage.remove_pending_input("conv_a", "pend_taken", durable=False)
        await storage.save_turn(attrs.evolve(turn("turn_1", "conv_a", sess.id), status=TurnStatus.COMPLETED))
        await storage.flush()
        assert [p.item.id for p in await storage.list_pending_inputs("conv_a")] == ["pend_kept"]
        (got,) = await storage.get_turns("conv_a", ["turn_1"])
        assert got.status is TurnStatus.COMPLETED
        await storage.save_turn(attrs.evolve(got, status=TurnStatus.FAILED), durable=True)  # a later batch
        assert (await storage.get_turns("conv_a", ["turn_1"]))[0].status is TurnStatus.FAILED
    finally:
        await storage.close()


async def test_a_saved_turn_gets_only_what_changes_over_its_life(db_path: str) -> None:
    """A turn's end updates the row its start committed (status, end, model, usage, error), alone or
    in the batch of its start; a turn whose row was never saved stays missing, as an UPDATE leaves it."""
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        await storage.save_turn(turn("turn_1", "conv_a", sess.id, started=1), new=True, durable=True)
        ended = attrs.evolve(
            turn("turn_1", "conv_a", sess.id, started=99),  # a start that changed is not written
            status=TurnStatus.FAILED,
            ended_at=at(5),
            model=ModelRef(provider="anthropic", name="claude"),
            usage=TokenUsage(input_tokens=7, output_tokens=3, total_tokens=10),
            error=ErrorInfo(kind="providerError", message="boom"),
        )
        await storage.save_turn(ended, saved=True, durable=True)
        (got,) = await storage.get_turns("conv_a", ["turn_1"])
        assert got == attrs.evolve(ended, started_at=at(1))
        # the start and the end in one batch: the insert, then the update
        await storage.save_turn(turn("turn_2", "conv_a", sess.id), new=True)
        await storage.save_turn(turn("turn_2", "conv_a", sess.id, status=TurnStatus.COMPLETED), saved=True)
        await storage.save_turn(turn("turn_never", "conv_a", sess.id, status=TurnStatus.COMPLETED), saved=True)
        await storage.flush()
        assert [(t.id, t.status) for t in await storage.get_turns("conv_a", ["turn_2", "turn_never"])] == [
            ("turn_2", TurnStatus.COMPLETED)
        ]
    finally:
        await storage.close()


async def test_a_flush_with_nothing_to_commit_is_done_at_once(db_path: str) -> None:
    """No round trip through the writer thread when nothing is queued or committing; a queued write
    is waited for."""
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        assert storage.flush().done()
        await storage.save_turn(turn("turn_1", "conv_a", sess.id), new=True)
        flushing = storage.flush()
        assert not flushing.done()
        await flushing
        assert [t.id for t in await storage.get_turns("conv_a", ["turn_1"])] == ["turn_1"]
        assert storage.flush().done()
    finally:
        await storage.close()


async def test_pending_inputs_order_replace_and_remove(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path, flush_interval=NEVER)
    try:
        sess = await make_conversation(storage, "conv_a")
        await make_conversation(storage, "conv_b")
        pending = [PendingInput(item=item(f"pend_{i}", "conv_a", sess.id), input_id=f"in_{i}") for i in range(4)]
        for p in pending:
            await storage.save_pending_input(p)
        await storage.save_pending_input(PendingInput(item=item("pend_b", "conv_b", "sess_conv_b")))
        # replacing keeps the queue position
        steer = PendingInput(item=item("pend_1", "conv_a", sess.id, text="new"), mode=SessionInputMode.STEER)
        steer.turn_id = "turn_9"
        await storage.save_pending_input(steer)
        await storage.remove_pending_input("conv_a", "pend_0")
        got = await storage.list_pending_inputs("conv_a")
        assert [p.item.id for p in got] == ["pend_1", "pend_2", "pend_3"]
        assert got[0] == steer
        # removed and submitted again: back of the queue
        await storage.remove_pending_input("conv_a", "pend_2")
        await storage.save_pending_input(pending[2])
        assert [p.item.id for p in await storage.list_pending_inputs("conv_a")] == ["pend_1", "pend_3", "pend_2"]
        assert [p.item.id for p in await storage.list_pending_inputs("conv_b")] == ["pend_b"]
    finally:
        await storage.close()


async def test_find_input_pending_or_logged(storage: DuckDBStorage) -> None:
    sess = await make_conversation(storage, "conv_a")
    await storage.save_pending_input(PendingInput(item=item("item_p", "conv_a", sess.id), input_id="in_p"))
    await storage.append_item(item("item_l", "conv_a", sess.id), input_id="in_l")
    assert await storage.find_input("conv_a", "in_p") == "item_p"
    assert await storage.find_input("conv_a", "in_l") == "item_l"
    assert await storage.find_input("conv_b", "in_l") is None
    assert await storage.find_input("conv_a", "in_x") is None
    # taken into a turn: the pending row goes, the logged item keeps the input id
    await storage.remove_pending_input("conv_a", "item_p")
    await storage.append_item(item("item_p", "conv_a", sess.id), input_id="in_p")
    assert await storage.find_input("conv_a", "in_p") == "item_p"


async def test_interrupt_running_turns(storage: DuckDBStorage) -> None:
    a = await make_conversation(storage, "conv_a")
    b = await make_conversation(storage, "conv_b")
    await storage.save_turn(turn("turn_a1", "conv_a", a.id, started=1, status=TurnStatus.COMPLETED))
    await storage.save_turn(turn("turn_a2", "conv_a", a.id, started=2))
    await storage.save_turn(turn("turn_b1", "conv_b", b.id, started=3))
    interrupted = await storage.interrupt_running_turns(at(10))
    assert [(t.id, t.status, t.ended_at) for t in interrupted] == [
        ("turn_a2", TurnStatus.INTERRUPTED, at(10)),
        ("turn_b1", TurnStatus.INTERRUPTED, at(10)),
    ]
    assert await storage.get_turns("conv_a", ["turn_a1", "turn_a2"]) == [
        turn("turn_a1", "conv_a", a.id, started=1, status=TurnStatus.COMPLETED),
        interrupted[0],
    ]
    assert await storage.interrupt_running_turns(at(11)) == []


async def test_model_calls_order_filter_and_usage_views(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path)
    sess = await make_conversation(storage, "conv_a")
    await storage.create_session(session("sess_2", "conv_a"))
    await storage.append_model_call(model_call("mc_2", "conv_a", sess.id, started=86_400, tokens=5))
    await storage.append_model_call(model_call("mc_1", "conv_a", "sess_2", started=1, tokens=7))
    await storage.append_model_call(attrs.evolve(model_call("mc_3", "conv_a", sess.id, started=2), workspace="/b"))
    assert [c.id for c in await storage.list_model_calls("conv_a")] == ["mc_1", "mc_3", "mc_2"]
    assert [c.id for c in await storage.list_model_calls("conv_a", sess.id)] == ["mc_3", "mc_2"]
    await storage.close()
    by_day = sql(db_path, "SELECT day, model, calls, input_tokens, total_tokens FROM usage_by_model_day ORDER BY day")
    assert by_day == [(dt.date(2025, 3, 1), "claude", 2, 17, 19), (dt.date(2025, 3, 2), "claude", 1, 5, 6)]
    by_workspace = sql(db_path, "SELECT workspace, calls, input_tokens FROM usage_by_workspace ORDER BY workspace")
    assert by_workspace == [("/b", 1, 10), ("/work/a", 2, 12)]


# Schema, lock, lifecycle


async def test_migrations_record_the_version_and_reopen_is_a_no_op(db_path: str) -> None:
    storage = await DuckDBStorage.open(db_path)
    await make_conversation(storage, "conv_a")
    await storage.close()
    versions = sql(db_path, "SELECT version, applied_at FROM schema_version")
    assert [v for v, _ in versions] == list(range(1, LATEST_VERSION + 1))
    storage = await DuckDBStorage.open(db_path)
    assert await storage.get_conversation("conv_a") is not None
    await storage.close()
    assert sql(db_path, "SELECT version, applied_at FROM schema_version") == versions

    sql(db_path, "INSERT INTO schema_version VALUES (99, now())")
    with pytest.raises(StorageError, match="schema version 99"):
        await DuckDBStorage.open(db_path)


LOCK_CHILD = """
import asyncio, json, sys
from openvaala_lsp.storage.duckdb_store import DuckDBStorage

async def main():
    try:
        await DuckDBStorage.open(sys.argv[1])
    except Exception as exc:
        print(json.dumps({"type": type(exc).__name__, "message": str(exc), "pid": getattr(exc, "pid", None)}))

asyncio.run(main())
"""


async def test_second_process_gets_a_clear_lock_error(storage: DuckDBStorage, db_path: str) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCK_CHILD, db_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=CHILD_ENV
    )
    out, err = await child.communicate()
    assert err == b"" and child.returncode == 0
    result = json.loads(out)
    assert result["type"] == "StorageLockedError" and result["pid"] == os.getpid()
    assert db_path in result["message"] and f"process {os.getpid()}" in result["message"]
    # the same file twice in one process would share one database and repeat ordinals
    with pytest.raises(StorageLockedError):
        await DuckDBStorage.open(db_path)


async def test_checkpoint_and_flush(storage: DuckDBStorage, db_path: str) -> None:
    sess = await make_conversation(storage, "conv_a")
    await storage.append_item(item("item_1", "conv_a", sess.id))
    await storage.flush()
    await storage.checkpoint()
    assert await storage.count_items("conv_a") == 1


def test_seed_functions_write_what_the_api_reads(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "seed_storage", Path(__file__).parent.parent / "bench/seed_storage.py"
    )
    assert spec is not None and spec.loader is not None
    seed_storage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seed_storage)
    path = str(tmp_path / "seed.duckdb")
    ids = seed_storage.seed_conversations(path, n=30)
    big = seed_storage.seed_items(path, conversation_items=300, other_conversations=2, items_per_other=50)

    async def check() -> None:
        storage = await DuckDBStorage.open(path)
        try:
            assert await storage.count_items(big) == 300 and await storage.last_ordinal(big) == 300
            ordinals, _ = await ordinals_of(storage, big, limit=100, order=Order.DESC)
            assert ordinals == list(range(300, 0, -1))
            page = await storage.list_conversations(cursor=None, limit=500, order=Order.ASC, archived=None, query=None)
            assert {entry.conversation.id for entry in page.items} >= set(ids) | {big}
        finally:
            await storage.close()

    asyncio.run(check())


def test_tables_replaced_whole_name_every_column() -> None:
    """A `whole` table's rows are replaced by a delete and an insert: a column the row did not carry
    would be lost, so its columns must be every column of the table."""
    import duckdb

    from openvaala_lsp.storage import codec

    con = duckdb.connect(":memory:")
    migrate(con, ":memory:")
    for table in (codec.CONVERSATIONS, codec.SESSIONS, codec.TURNS, codec.PENDING_INPUTS):
        columns = {row[0] for row in con.execute(f"DESCRIBE {table.name}").fetchall()}
        assert table.whole == (set(table.columns) == columns), table.name
