"""A tool result's file changes on the wire: lowerCamelCase with absent fields left out, in a
snapshot's pages whole when they fit, and with their diffs cut to the marker line (counts kept)
when one entry alone is past a page; the runtime's own item untouched."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from openvaala_lsp.file_diff import CUT_MARKER, change_between
from openvaala_lsp.model import Content, FileChange, FileChangeKind, Item, ItemStatus, ItemType, ToolResult
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import structure, unstructure
from openvaala_lsp.runtime.snapshots import Snapshot, paged

NOW = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


def streaming_result(*changes: FileChange) -> api.StreamingItem:
    item = Item(
        id="item_r",
        conversation_id="conv",
        session_id="sess",
        turn_id="turn",
        type=ItemType.TOOL_RESULT,
        status=ItemStatus.STREAMING,
        created_at=NOW,
        content=[Content(type="text", text="Created it")],
        tool_result=ToolResult(call_id="call_1", name="write_file", file_changes=list(changes)),
    )
    return api.StreamingItem(item_index=3, item=item)


def big(path: str, lines: int) -> FileChange:
    change = change_between(path, None, "".join(f"line {n} {'-' * 30}\n" for n in range(lines)).encode())
    assert change is not None
    return change


def size(value: Any) -> int:
    return len(json.dumps(unstructure(value)).encode())


def test_on_the_wire_a_change_is_camel_case_without_absent_fields() -> None:
    moved = FileChange(path="/w/b.py", kind=FileChangeKind.MOVE, moved_from="/w/a.py", diff="", additions=0)
    binary = FileChange(path="/w/x.png", kind=FileChangeKind.ADD, binary=True)
    entry = streaming_result(moved, binary)
    wire = unstructure(entry.item)["toolResult"]
    assert wire == {
        "callId": "call_1",
        "name": "write_file",
        "isError": False,
        "fileChanges": [
            {"path": "/w/b.py", "kind": "move", "movedFrom": "/w/a.py", "diff": "", "additions": 0, "deletions": 0},
            {"path": "/w/x.png", "kind": "add", "additions": 0, "deletions": 0, "binary": True},
        ],
    }
    assert structure(unstructure(entry.item), Item) == entry.item


def test_a_snapshot_holds_the_changes_whole_when_they_fit() -> None:
    entry = streaming_result(big("/w/a.txt", 100))
    [page] = paged(Snapshot(streaming_items=[entry]), 1_000_000)
    assert page.streaming_items == [entry]


def test_an_entry_past_any_page_has_its_diffs_cut_to_the_marker_and_keeps_its_counts() -> None:
    first, second = big("/w/a.txt", 1500), big("/w/b.txt", 200)
    entry = streaming_result(first, second)
    budget = 20_000
    assert size(entry) > budget
    [page] = paged(Snapshot(streaming_items=[entry]), budget)
    assert size(page) <= budget
    [shrunk] = page.streaming_items
    assert shrunk.item.tool_result is not None and shrunk.item.tool_result.file_changes is not None
    cut, kept = shrunk.item.tool_result.file_changes
    assert cut.diff is not None and cut.diff.startswith(CUT_MARKER) and cut.diff.count("\n") == 1
    assert (cut.additions, cut.path) == (1500, "/w/a.txt")
    assert kept == second  # the biggest went first, and that was enough
    assert entry.item.tool_result is not None and entry.item.tool_result.file_changes == [first, second]
