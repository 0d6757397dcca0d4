"""A session snapshot in pages (`runtime/snapshots.py`): each page under its budget as JSON, every
entry once and in order, an entry too big for any page shrunk to fit with what was left out said."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from openvaala_lsp.model import Content, Item, ItemType, SessionInputMode
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import unstructure
from openvaala_lsp.runtime.snapshots import Snapshot, paged

NOW = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


def pending(number: int, *content: Content) -> api.PendingInputInfo:
    item = Item(
        id=f"item_{number}",
        conversation_id="conv",
        session_id="sess",
        type=ItemType.USER_MESSAGE,
        created_at=NOW,
        content=list(content),
    )
    return api.PendingInputInfo(item=item, mode=SessionInputMode.QUEUE)


def size(value: Any) -> int:
    return len(json.dumps(unstructure(value)).encode())


def test_pages_hold_every_entry_once_in_order_each_under_its_budget() -> None:
    inputs = [pending(n, Content(type="image", mime_type="image/png", data="A" * 40_000)) for n in range(10)]
    approval = api.PendingApproval(
        item_id="item_call", session_id="sess", approval=api.ApprovalRequest(tool="shell", arguments={"command": "ls"})
    )
    pages = paged(Snapshot(pending_inputs=inputs, pending_approvals=[approval]), 100_000)
    assert len(pages) > 1
    assert all(size(page) <= 100_000 for page in pages)
    assert pages[0].pending_approvals == [approval]  # the running turn's first
    assert [entry for page in pages for entry in page.pending_inputs] == inputs


def test_one_page_when_it_fits() -> None:
    snapshot = Snapshot(pending_inputs=[pending(1, Content(type="text", text="hi"))])
    assert paged(snapshot, 100_000) == [snapshot]
    assert paged(Snapshot(), 100_000) == [Snapshot()]


def test_an_entry_past_any_page_goes_shrunk_saying_what_was_left_out() -> None:
    big = pending(
        1, Content(type="text", text="keep me"), Content(type="image", mime_type="image/png", data="A" * 50_000)
    )
    [page] = paged(Snapshot(pending_inputs=[big]), 20_000)
    [entry] = page.pending_inputs
    assert size(page) <= 20_000
    assert entry.item.content == [
        Content(type="text", text="keep me"),
        Content(type="text", text="[image of 50000 bytes left out: past the message limit]"),
    ]
    assert big.item.content is not None and big.item.content[1].data  # the runtime's own is untouched
