"""File changes in storage: a toolResult item keeps its `file_changes` whole (a big diff in a file
beside the database, back on read), each change is a row of `file_changes` from the same commit,
`file_changes_v` and `lines_changed_daily` attribute them to the turn's workspace, agent and model,
`openvaala usage` shows the lines beside the tokens, a fork's copies add no rows, a deleted
conversation takes its rows, and a database of schema 8 gains the table empty."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from openvaala_lsp.cli.usage import render_report
from openvaala_lsp.file_diff import CUT_MARKER, change_between
from openvaala_lsp.model import (
    Content,
    Conversation,
    FileChange,
    FileChangeKind,
    Item,
    ItemStatus,
    ItemType,
    ModelCall,
    ModelRef,
    ModelSelection,
    Order,
    Session,
    ToolResult,
    Turn,
    encoded_size,
)
from openvaala_lsp.storage.codec import ROW_BYTES
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.storage.memory import MemoryStorage
from openvaala_lsp.storage.migrations import MIGRATIONS, migrate
from openvaala_lsp.storage.opening import CONFIG
from openvaala_lsp.storage.reports import REPORTS, Filters, report_sql

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
WORKSPACE = "/home/me/app"


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def result(iid: str, changes: list[FileChange], *, cid: str = "conv_a", turn: str = "turn_a") -> Item:
    return Item(
        id=iid,
        conversation_id=cid,
        session_id=f"sess_{cid}",
        turn_id=turn,
        type=ItemType.TOOL_RESULT,
        status=ItemStatus.COMPLETED,
        created_at=at(5),
        content=[Content(type="text", text="Replaced 1 occurrence")],
        tool_result=ToolResult(call_id=f"call_{iid}", name="edit", file_changes=changes),
    )


def edit_of(path: str, lines: int) -> FileChange:
    before = "".join(f"line {n}\n" for n in range(lines)).encode()
    change = change_between(path, before, before.replace(b"line 1\n", b"line one\nline one more\n"))
    assert change is not None
    return change


async def opened(path: Path, cid: str = "conv_a", *, model: str = "gpt-5", agent: str = "lead") -> DuckDBStorage:
    storage = await DuckDBStorage.open(str(path))
    await add_conversation(storage, cid, model=model, agent=agent)
    return storage


async def add_conversation(storage: DuckDBStorage, cid: str, *, model: str = "gpt-5", agent: str = "lead") -> None:
    ref = ModelRef(provider="openai", name=model)
    session = Session(
        id=f"sess_{cid}", conversation_id=cid, agent_name=agent, model=ModelSelection(model=ref), created_at=at(0)
    )
    await storage.create_conversation(Conversation(id=cid, created_at=at(0), updated_at=at(0)), session)
    turn_id = f"turn_{cid.removeprefix('conv_')}"
    await storage.save_turn(Turn(id=turn_id, conversation_id=cid, session_id=session.id, started_at=at(0), model=ref))
    call = ModelCall(
        id=f"call_{cid}",
        conversation_id=cid,
        session_id=session.id,
        turn_id=turn_id,
        provider="openai",
        model=model,
        started_at=at(1),
        workspace=WORKSPACE,
    )
    await storage.append_model_call(call)


async def test_a_tool_result_keeps_its_changes_and_each_is_a_row(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    edit = edit_of(f"{WORKSPACE}/a.py", 10)
    added = change_between(f"{WORKSPACE}/new.py", None, b"x\ny\nz\n")
    image = change_between(f"{WORKSPACE}/logo.png", b"\x89PNG\0old", b"\x89PNG\0new")
    assert added is not None and image is not None
    item = result("item_1", [edit, added, image])
    await storage.append_item(item, durable=True)
    [logged] = (await storage.list_items("conv_a", session_id=None, cursor=None, limit=10, order=Order.ASC)).items
    assert logged.item == item and logged.item.tool_result is not None
    assert logged.item.tool_result.file_changes == [edit, added, image]
    rows = (
        await storage.query(
            "SELECT item_id, tool, path, kind, additions, deletions, is_binary, workspace, agent, provider, model"
            " FROM file_changes_v ORDER BY seq",
            [],
            10,
        )
    ).rows
    assert rows == [
        ["item_1", "edit", f"{WORKSPACE}/a.py", "update", 2, 1, False, WORKSPACE, "lead", "openai", "gpt-5"],
        ["item_1", "edit", f"{WORKSPACE}/new.py", "add", 3, 0, False, WORKSPACE, "lead", "openai", "gpt-5"],
        ["item_1", "edit", f"{WORKSPACE}/logo.png", "update", 0, 0, True, WORKSPACE, "lead", "openai", "gpt-5"],
    ]
    await storage.append_item(result("item_2", []), durable=True)  # a result that changed nothing: no rows
    no_changes = result("item_3", [])
    assert no_changes.tool_result is not None
    no_changes.tool_result.file_changes = None
    await storage.append_item(no_changes, durable=True)
    assert (await storage.query("SELECT count(*) FROM file_changes", [], 1)).rows == [[3]]
    await storage.close()


async def test_a_big_diff_goes_to_a_file_and_comes_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "h.duckdb"
    storage = await opened(path)
    change = change_between(f"{WORKSPACE}/big.txt", None, "".join(f"line {n}\n" for n in range(6000)).encode())
    assert change is not None and change.diff is not None and CUT_MARKER in change.diff
    item = result("item_big", [change])
    assert encoded_size(item) > len(change.diff) > ROW_BYTES  # what pages and snapshots reckon with
    await storage.append_item(item, durable=True)
    await storage.close()
    with duckdb.connect(str(path), config=CONFIG) as con:
        [(payload_bytes, blob_refs)] = con.execute(
            "SELECT octet_length(payload::BLOB), (SELECT count(*) FROM blob_refs) FROM items"
        ).fetchall()
    assert payload_bytes <= ROW_BYTES and blob_refs == 1
    storage = await DuckDBStorage.open(str(path))
    [logged] = await storage.get_items("conv_a", ["item_big"])
    assert logged.item.tool_result is not None and logged.item.tool_result.file_changes == [change]
    await storage.close()


async def test_lines_changed_per_day_project_agent_and_model(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    await add_conversation(storage, "conv_b", model="claude", agent="reviewer")
    await storage.append_item(result("item_1", [edit_of(f"{WORKSPACE}/a.py", 10)]))
    await storage.append_item(result("item_2", [edit_of(f"{WORKSPACE}/a.py", 10)]))
    await storage.append_item(result("item_3", [edit_of(f"{WORKSPACE}/b.py", 10)], cid="conv_b", turn="turn_b"))
    await storage.flush()
    rows = (
        await storage.query(
            "SELECT day, workspace, agent, provider, model, files, changes, additions, deletions"
            " FROM lines_changed_daily ORDER BY model",
            [],
            10,
        )
    ).rows
    assert rows == [
        ["2025-03-01", WORKSPACE, "reviewer", "openai", "claude", 1, 1, 2, 1],
        ["2025-03-01", WORKSPACE, "lead", "openai", "gpt-5", 1, 2, 4, 2],
    ]
    await storage.close()


async def test_usage_shows_the_lines_changed_beside_the_tokens(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    await add_conversation(storage, "conv_b", model="claude")
    await storage.append_item(result("item_1", [edit_of(f"{WORKSPACE}/a.py", 10)]))
    await storage.append_item(result("item_2", [edit_of(f"{WORKSPACE}/b.py", 10)], cid="conv_b", turn="turn_b"))
    await storage.flush()
    for name in ("day", "model", "project", "conversation", "agent"):
        sql, parameters = report_sql(REPORTS[name], Filters())
        answer = await storage.query(sql, parameters, 100)
        columns = [column.name for column in answer.columns]
        found = [dict(zip(columns, row, strict=True)) for row in answer.rows]
        assert sum(row["lines_added"] for row in found) == 4 and sum(row["lines_deleted"] for row in found) == 2
        assert all(row["files_changed"] == 1 for row in found) or name in ("day", "project", "agent")
        text = render_report(
            REPORTS[name],
            {"columns": [{"name": c} for c in columns], "rows": answer.rows, "truncated": False},
            "tokens",
            Filters(),
        )
        heading = text.splitlines()[1].split()
        [total] = [line.split() for line in text.splitlines() if line.startswith("total")]
        assert heading[heading.index("+lines") : heading.index("+lines") + 2] == ["+lines", "-lines"]
        assert total[heading.index("+lines") : heading.index("+lines") + 2] == ["4", "2"]
    elsewhere = Filters(project="/somewhere/else")
    sql, parameters = report_sql(REPORTS["day"], elsewhere)
    assert (await storage.query(sql, parameters, 10)).rows == []
    since = Filters(since=at(3))  # the calls before it are out, and with them their lines
    sql, parameters = report_sql(REPORTS["model"], since)
    assert (await storage.query(sql, parameters, 10)).rows == []
    await storage.close()


async def test_a_fork_copies_the_changes_in_its_items_but_adds_no_rows(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    change = edit_of(f"{WORKSPACE}/a.py", 10)
    await storage.append_item(result("item_1", [change]))
    fork = Conversation(id="conv_f", created_at=at(9), updated_at=at(9))
    session = Session(id="sess_conv_f", conversation_id="conv_f", created_at=at(9))
    await storage.import_conversation(fork, [session], [], [result("item_f1", [change], cid="conv_f")])
    [copied] = await storage.get_items("conv_f", ["item_f1"])
    assert copied.item.tool_result is not None and copied.item.tool_result.file_changes == [change]
    assert (await storage.query("SELECT conversation_id FROM file_changes", [], 10)).rows == [["conv_a"]]
    await storage.close()


async def test_deleting_a_conversation_takes_its_rows(tmp_path: Path) -> None:
    storage = await opened(tmp_path / "h.duckdb")
    await add_conversation(storage, "conv_b")
    await storage.append_item(result("item_1", [edit_of(f"{WORKSPACE}/a.py", 10)]))
    await storage.append_item(result("item_2", [edit_of(f"{WORKSPACE}/b.py", 10)], cid="conv_b", turn="turn_b"))
    assert await storage.delete_conversation("conv_a")
    assert (await storage.query("SELECT conversation_id FROM file_changes", [], 10)).rows == [["conv_b"]]
    await storage.close()


async def test_memory_keeps_the_changes_of_an_ephemeral_conversation() -> None:
    memory = MemoryStorage()
    session = Session(id="sess_conv_m", conversation_id="conv_m", created_at=at(0))
    await memory.create_conversation(Conversation(id="conv_m", created_at=at(0), updated_at=at(0)), session)
    change = edit_of("/tmp/m.py", 10)
    item = result("item_m", [change], cid="conv_m")
    await memory.append_item(item)
    assert item.tool_result is not None
    item.tool_result.file_changes = []  # the caller's later changes are not the store's
    [logged] = await memory.get_items("conv_m", ["item_m"])
    assert logged.item.tool_result is not None and logged.item.tool_result.file_changes == [change]


async def test_a_database_of_schema_8_gains_the_table_and_views_empty(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    before = next(version for version, sql in MIGRATIONS if "CREATE TABLE file_changes" in sql) - 1
    with duckdb.connect(str(path), config=CONFIG) as con:
        con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)")
        for version, sql in MIGRATIONS[:before]:
            con.execute(sql)
            con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    storage = await DuckDBStorage.open(str(path))
    await add_conversation(storage, "conv_a")
    assert (await storage.query("SELECT count(*) FROM lines_changed_daily", [], 1)).rows == [[0]]
    item = result("item_1", [edit_of(f"{WORKSPACE}/a.py", 10)])
    await storage.append_item(item, durable=True)
    assert (await storage.query("SELECT additions, deletions FROM file_changes_v", [], 1)).rows == [[2, 1]]
    assert (await storage.query("SELECT max(version) FROM schema_version", [], 1)).rows == [[MIGRATIONS[-1][0]]]
    await storage.close()
    with duckdb.connect(str(path), config=CONFIG) as con:
        assert migrate(con, str(path)) == MIGRATIONS[-1][0]  # reopened: nothing more to do
        assert con.execute("SELECT count(*) FROM file_changes").fetchall() == [(1,)]


def test_the_item_codec_round_trips_every_field_of_a_change() -> None:
    from openvaala_lsp.storage.codec import item_from_json, item_to_json

    moved = FileChange(
        path="/w/new",
        kind=FileChangeKind.MOVE,
        moved_from="/w/old",
        diff="@@ -1 +1 @@\n-a\n+b\n",
        additions=1,
        deletions=1,
    )
    binary = FileChange(path="/w/x.bin", kind=FileChangeKind.DELETE, binary=True)
    item = result("item_c", [moved, binary])
    assert item_from_json(item_to_json(item)) == item
