"""A session's snapshot (subscribeSession) in pages that each fit one message.

Queued screenshots made a snapshot of 69 MiB, past the 64 MiB every message must keep under. The
snapshot is taken whole, as always, in one step with the subscription; what does not fit the answer
waits on the subscription as further pages (`getSessionSnapshot`). Its events flow meanwhile, as
always: an editor that reads the pages applies the events after them (the snapshot plus the events
stay exact), and one that does not know of pages stays live, missing only the later pages' entries.

Entries keep their order within each list; the running turn's (streaming items, then approvals) come
first, as an editor draws those first. An entry too big for any page on its own (possible only when
the message limit was lowered since it was made) goes with its biggest strings left out, each said
so in its place.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import attrs

from openvaala_lsp.file_diff import capped
from openvaala_lsp.model import Content, Item, encoded_size
from openvaala_lsp.protocol.api import PendingApproval, PendingInputInfo, StreamingItem

ENTRY_ALLOWANCE = 256  # the keys around an entry (`itemIndex`, `mode`, `sessionId`, ...)


@attrs.define(kw_only=True)
class Snapshot:
    streaming_items: list[StreamingItem] = attrs.Factory(list)
    pending_approvals: list[PendingApproval] = attrs.Factory(list)
    pending_inputs: list[PendingInputInfo] = attrs.Factory(list)


def paged(snapshot: Snapshot, budget: int) -> list[Snapshot]:
    """The snapshot in pages of at most `budget` bytes as JSON (at least one page, maybe empty)."""
    pages = [Snapshot()]
    used = 0
    entries: list[tuple[str, Any]] = [
        *(("streaming_items", entry) for entry in snapshot.streaming_items),
        *(("pending_approvals", entry) for entry in snapshot.pending_approvals),
        *(("pending_inputs", entry) for entry in snapshot.pending_inputs),
    ]
    for field, entry in entries:
        size = _size(entry)
        if size > budget:
            entry, size = _shrunk(entry, budget), budget
        if used + size > budget and used:
            pages.append(Snapshot())
            used = 0
        getattr(pages[-1], field).append(entry)
        used += size
    return pages


def _size(entry: StreamingItem | PendingApproval | PendingInputInfo) -> int:
    if isinstance(entry, PendingApproval):
        approval = entry.approval
        strings = [approval.reason, approval.command, *(approval.paths or [])]
        return ENTRY_ALLOWANCE + len(json.dumps(approval.arguments, default=str)) + sum(_json(s) for s in strings)
    return ENTRY_ALLOWANCE + encoded_size(entry.item)


def _json(text: str | None) -> int:
    return 0 if text is None else len(json.dumps(text))


def _shrunk(entry: Any, budget: int) -> Any:
    """A copy of an entry past `budget` with its biggest strings left out until it fits."""
    if isinstance(entry, PendingApproval):
        approval = attrs.evolve(entry.approval, arguments={})
        left_out = f"its arguments ({_size(entry)} bytes) are left out: past the message limit"
        approval.reason = f"{approval.reason} ({left_out})" if approval.reason else left_out
        return attrs.evolve(entry, approval=approval)
    return attrs.evolve(entry, item=shrunk_item(entry.item, budget - ENTRY_ALLOWANCE))


def shrunk_item(item: Item, budget: int) -> Item:
    """`item` with its biggest content parts replaced by a note saying what was left out, then its
    file changes' diffs cut to their marker line, until `encoded_size` is within `budget` (or nothing
    is left to replace)."""
    item = copy.copy(item)
    parts = list(item.content or ())
    item.content = parts
    by_size = sorted(range(len(parts)), key=lambda i: -len(parts[i].data or parts[i].text or ""))
    for index in by_size:
        if encoded_size(item) <= budget:
            break
        part = parts[index]
        size = len(part.data or part.text or "")
        parts[index] = Content(type="text", text=f"[{part.type} of {size} bytes left out: past the message limit]")
    if item.tool_result is not None and item.tool_result.file_changes:
        changes = list(item.tool_result.file_changes)
        item.tool_result = attrs.evolve(item.tool_result, file_changes=changes)
        for index in sorted(range(len(changes)), key=lambda i: -len(changes[i].diff or "")):
            if encoded_size(item) <= budget or not changes[index].diff:
                break
            # the counts stay: an editor still says what changed, and fetches the item for the diff
            changes[index] = attrs.evolve(changes[index], diff=capped(changes[index].diff or "", max_bytes=0))
    return item
