"""Items saved as they stream (`save_streaming`, the `streaming_items` table) and how turns end (`reason`):
what a process left streaming is logged `interrupted` at the next start, as last saved, once; a
logged item leaves no row behind; turns carry their reason in rows and in `turns_v`, and a database
of an earlier schema gets the reasons its turns' status and error tell."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from openvaala_lsp.model import (
    Content,
    Conversation,
    ErrorInfo,
    Item,
    ItemStatus,
    ItemType,
    Order,
    Session,
    ToolCall,
    Turn,
    TurnReason,
    TurnStatus,
)
from openvaala_lsp.storage.codec import ROW_BYTES
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.memory import MemoryStorage
from openvaala_lsp.storage.migrations import MIGRATIONS, migrate
from openvaala_lsp.storage.opening import CONFIG

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def answer(iid: str, text: str, *, cid: str = "conv_a", kind: ItemType = ItemType.ASSISTANT_MESSAGE) -> Item:
    return Item(
        id=iid,
        conversation_id=cid,
        session_id=f"sess_{cid}",
        turn_id=f"turn_{cid}",
        type=kind,
        status=ItemStatus.STREAMING,
        created_at=at(1),
        content=[Content(type="text", text=text)],
    )


async def opened(path: Path, *cids: str) -> DuckDBStorage:
    storage = await DuckDBStorage.open(str(path))
    for cid in cids:
        session = Session(id=f"sess_{cid}", conversation_id=cid, created_at=at(0))
        await storage.create_conversation(Conversation(id=cid, created_at=at(0), updated_at=at(0)), session)
        await storage.save_turn(Turn(id=f"turn_{cid}", conversation_id=cid, session_id=session.id, started_at=at(0)))
    return storage


def rows(path: Path, query: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(path), config=CONFIG) as con:
        return con.execute(query).fetchall()


async def logged(storage: DuckDBStorage, cid: str = "conv_a") -> list[tuple[int, str, ItemStatus, str | None]]:
    page = await storage.list_items(cid, session_id=None, cursor=None, limit=50, order=Order.ASC)
    return [
        (entry.ordinal, entry.item.id, entry.item.status, (entry.item.content or [Content(type="text")])[0].text)
        for entry in page.items
    ]


async def test_what_a_stopped_process_left_streaming_is_logged_interrupted_as_last_saved(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a")
    first = answer("item_1", "")
    first.status = ItemStatus.COMPLETED
    await storage.append_item(first)
    growing = answer("item_2", "Partial")
    storage.save_streaming(growing)
    growing.content = [Content(type="text", text="Partial answer")]
    storage.save_streaming(growing)  # replaces the row before
    call = answer("item_3", "", kind=ItemType.TOOL_CALL)
    call.content, call.tool_call = None, ToolCall(call_id="c1", name="shell", arguments='{"cmd": "ls')
    call.status = ItemStatus.AWAITING_APPROVAL
    storage.save_streaming(call)
    await storage.flush()
    await storage.close()  # as a kill would leave it: the rows are committed, the items never logged
    assert rows(path, "SELECT item_id, turn_id FROM streaming_items ORDER BY item_id") == [
        ("item_2", "turn_conv_a"),
        ("item_3", "turn_conv_a"),
    ]

    storage = await DuckDBStorage.open(str(path))
    try:
        [turn] = await storage.interrupt_running_turns(at(9))
        assert (turn.status, turn.reason, turn.ended_at) == (TurnStatus.INTERRUPTED, TurnReason.RUNTIME_STOPPED, at(9))
        assert await logged(storage) == [
            (1, "item_1", ItemStatus.COMPLETED, ""),
            (2, "item_2", ItemStatus.INTERRUPTED, "Partial answer"),
            (3, "item_3", ItemStatus.INTERRUPTED, None),
        ]
        [restored_call] = await storage.get_items("conv_a", ["item_3"])
        assert restored_call.item.tool_call == call.tool_call
        assert await storage.interrupt_running_turns(at(10)) == []  # once: the rows went with that commit
        assert len(await logged(storage)) == 3
        assert await storage.append_item(answer("item_4", "next")) == 4  # ordinals go on after them
        await storage.flush()
    finally:
        await storage.close()
    assert rows(path, "SELECT count(*) FROM streaming_items") == [(0,)]
    assert rows(path, "SELECT status, reason FROM turns") == [("interrupted", "runtimeStopped")]


async def test_a_logged_item_leaves_no_streaming_row(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a")
    committed = answer("item_1", "saved, committed, then logged")
    storage.save_streaming(committed)
    await storage.flush()
    batched = answer("item_2", "saved and logged in one batch")
    storage.save_streaming(batched)
    for item in (committed, batched):
        item.status = ItemStatus.COMPLETED
        await storage.append_item(item)
    await storage.flush()
    await storage.close()
    assert rows(path, "SELECT count(*) FROM streaming_items") == [(0,)]
    storage = await DuckDBStorage.open(str(path))
    try:
        await storage.interrupt_running_turns(at(9))
        assert [status for _, _, status, _ in await logged(storage)] == [ItemStatus.COMPLETED, ItemStatus.COMPLETED]
    finally:
        await storage.close()


async def test_a_save_after_the_item_is_logged_never_logs_it_twice(tmp_path: Path) -> None:
    """A late save (a timer racing the item's end) leaves a row behind: the next start skips it."""
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a")
    done = answer("item_1", "whole")
    done.status = ItemStatus.COMPLETED
    await storage.append_item(done)
    await storage.flush()
    late = answer("item_1", "who")
    storage.save_streaming(late)
    await storage.flush()
    await storage.close()
    storage = await DuckDBStorage.open(str(path))
    try:
        await storage.interrupt_running_turns(at(9))
        assert await logged(storage) == [(1, "item_1", ItemStatus.COMPLETED, "whole")]
    finally:
        await storage.close()
    assert rows(path, "SELECT count(*) FROM streaming_items") == [(0,)]


async def test_a_long_partial_answer_goes_to_its_file_once_logged(tmp_path: Path) -> None:
    """The streaming row holds the whole text; logged, it is sealed as any item (`blobs.py`)."""
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a")
    long = "x" * (ROW_BYTES * 3)
    storage.save_streaming(answer("item_1", long))
    await storage.flush()
    await storage.close()
    storage = await DuckDBStorage.open(str(path))
    try:
        await storage.interrupt_running_turns(at(9))
        assert await logged(storage) == [(1, "item_1", ItemStatus.INTERRUPTED, long)]
    finally:
        await storage.close()
    assert rows(path, "SELECT count(*) FROM blob_refs WHERE item_id = 'item_1'") == [(1,)]


async def test_a_deleted_conversations_streaming_items_stay_deleted(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a", "conv_b")
    storage.save_streaming(answer("item_a", "going", cid="conv_a"))
    storage.save_streaming(answer("item_b", "kept", cid="conv_b"))
    await storage.flush()
    assert await storage.delete_conversation("conv_a")
    storage.save_streaming(answer("item_late", "saved after the delete", cid="conv_a"))  # a save racing it
    await storage.flush()
    await storage.close()
    storage = await DuckDBStorage.open(str(path))
    try:
        await storage.interrupt_running_turns(at(9))
        assert await logged(storage, "conv_a") == []
        assert await storage.get_conversation("conv_a") is None
        assert await logged(storage, "conv_b") == [(1, "item_b", ItemStatus.INTERRUPTED, "kept")]
    finally:
        await storage.close()
    assert rows(path, "SELECT count(*) FROM streaming_items") == [(0,)]


async def test_turns_keep_their_reason_in_rows_and_turns_v(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    storage = await opened(path, "conv_a")
    ended = Turn(
        id="turn_conv_a",
        conversation_id="conv_a",
        session_id="sess_conv_a",
        started_at=at(0),
        ended_at=at(2),
        status=TurnStatus.FAILED,
        reason=TurnReason.MODEL_ERROR,
        error=ErrorInfo(kind="rateLimited", message="HTTP 429: slow down"),
    )
    await storage.save_turn(ended, saved=True)  # an update of what changes
    running = Turn(id="turn_2", conversation_id="conv_a", session_id="sess_conv_a", started_at=at(3))
    await storage.save_turn(running, new=True)
    assert await storage.get_turns("conv_a", ["turn_conv_a", "turn_2"]) == [ended, running]
    result = await storage.query("SELECT turn_id, status, reason, error_kind FROM turns_v ORDER BY started_at", [], 10)
    assert result.rows == [["turn_conv_a", "failed", "modelError", "rateLimited"], ["turn_2", "running", None, None]]
    await storage.close()


async def test_turns_of_an_earlier_schema_get_the_reason_their_ending_tells(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    before = next(version for version, sql in MIGRATIONS if "ADD COLUMN reason" in sql) - 1
    with duckdb.connect(str(path), config=CONFIG) as con:
        con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)")
        for version, sql in MIGRATIONS[:before]:
            con.execute(sql)
            con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
        ended = [
            ("t1", "completed", None),
            ("t2", "interrupted", None),
            ("t3", "failed", "hookBlocked"),
            ("t4", "failed", "internal"),
            ("t5", "failed", "rateLimited"),
            ("t6", "running", None),
        ]
        for n, (tid, status, kind) in enumerate(ended):
            con.execute(
                "INSERT INTO turns VALUES (?, 'c', 's', ?, ?, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, ?, NULL)",
                [tid, status, at(n), kind],
            )
        migrate(con, str(path))
        found = con.execute("SELECT turn_id, reason FROM turns_v ORDER BY started_at").fetchall()
    assert found == [
        ("t1", "completed"),
        ("t2", None),  # the user's or the runtime's stop: not recorded then
        ("t3", "cancelledByHook"),
        ("t4", "runtimeStopped"),
        ("t5", "modelError"),
        ("t6", None),
    ]


async def test_memory_keeps_no_streaming_item_and_ends_running_turns_stopped() -> None:
    memory = MemoryStorage()
    session = Session(id="sess_m", conversation_id="conv_m", created_at=at(0))
    await memory.create_conversation(Conversation(id="conv_m", created_at=at(0), updated_at=at(0)), session)
    await memory.save_turn(Turn(id="turn_m", conversation_id="conv_m", session_id="sess_m", started_at=at(0)))
    memory.save_streaming(answer("item_m", "gone with the process", cid="conv_m"))
    [turn] = await memory.interrupt_running_turns(at(9))
    assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.RUNTIME_STOPPED)
    assert await memory.count_items("conv_m") == 0
