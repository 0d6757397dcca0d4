"""The items a running turn produces: started, grown by deltas, then saved — each step published in
the same step as the state change, so a subscriber's snapshot plus the events after it are exact."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import attrs

from openvaala_lsp.model import Content, Item, ItemStatus, ItemType, Turn, new_id, utcnow
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.api import StreamingItem
from openvaala_lsp.storage.interfaces import Storage

Publish = Callable[[Any], None]
Saved = Callable[[int, Item], None]  # (ordinal, item): the item is in the log now


@attrs.define(eq=False)
class TurnItems:
    turn: Turn
    storage: Storage
    publish: Publish
    saved: Saved
    streaming: dict[int, Item] = attrs.Factory(dict)  # itemIndex -> item being produced
    next_index: int = 0

    def snapshot(self) -> list[StreamingItem]:
        return [StreamingItem(item_index=i, item=item) for i, item in sorted(self.streaming.items())]

    def start(self, kind: ItemType, **fields: Any) -> int:
        index = self.next_index
        self.next_index += 1
        item = Item(
            id=new_id("item"),
            conversation_id=self.turn.conversation_id,
            session_id=self.turn.session_id,
            turn_id=self.turn.id,
            type=kind,
            status=ItemStatus.STREAMING,
            created_at=utcnow(),
            **fields,
        )
        self.streaming[index] = item
        self.publish(events.ItemStarted(item_index=index, item=copy.deepcopy(item)))
        return index

    def start_text(self, kind: ItemType) -> int:
        return self.start(kind, content=[Content(type="text", text="")])

    def append_text(self, index: int, text: str) -> None:
        item = self.streaming[index]
        assert item.content
        item.content[0].text = (item.content[0].text or "") + text
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=text))

    def append_arguments(self, index: int, fragment: str) -> None:
        item = self.streaming[index]
        assert item.tool_call is not None
        item.tool_call.arguments += fragment
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=fragment))

    async def complete(self, index: int, status: ItemStatus) -> Item:
        item = self.streaming[index]
        item.status = status
        ordinal = await self.storage.append_item(item, durable=True)
        # removed from the streaming set and reported saved in one step: snapshots stay exact
        del self.streaming[index]
        self.saved(ordinal, item)
        return item

    async def complete_all(self, status: ItemStatus) -> list[Item]:
        return [await self.complete(index, status) for index in sorted(self.streaming)]

    async def append(self, item: Item) -> None:
        """An item made whole at once (a hook's message) goes straight to the log."""
        self.saved(await self.storage.append_item(item, durable=True), item)
