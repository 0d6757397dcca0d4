"""The items a running turn produces: started, grown by deltas, then saved.

A save need not hold up the turn: `later=True` queues it and lets the turn go on (the item is in the
history at once); what reports it waits in `deferred` until its commit ends. Events keep their order
and report only what is committed: while a report waits, the turn's other events (`publish`) wait
behind it, so the turn goes on (reads the model's answer, runs a quick tool) during a commit instead
of stopping for it. A held event goes to the subscribers there were when its change was made: one
subscribing later has the change in its snapshot already, so a snapshot plus the events after it
stay exact.

An item still streaming is saved as it grows (`storage.save_streaming`, with the next group commit,
never waited for), so a process killed mid-answer leaves it to be logged `interrupted` at the next
start: after every `SAVE_EVERY_CHARS` of growth, and at most `SAVE_EVERY_SECONDS` after a growth not
saved yet, never per delta."""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import Callable
from typing import Any

import attrs

from openvaala_lsp.model import Content, Item, ItemStatus, ItemType, Turn, new_id, utcnow
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.api import StreamingItem
from openvaala_lsp.storage.interfaces import Storage

log = logging.getLogger(__name__)

# a kill loses at most this much of an item streaming (4 KiB of ASCII), or what came in this time
SAVE_EVERY_CHARS = 4096
SAVE_EVERY_SECONDS = 1.0

Publish = Callable[[Any], None]
Audience = Callable[[], Publish]  # publishes to the subscribers there are now, whenever it is called
Saved = Callable[..., None]  # (ordinal, item, remembered=): the item is in the log now
Remember = Callable[[Item], None]  # the item is in the history the next request sends


@attrs.define(eq=False)
class TurnItems:
    turn: Turn
    storage: Storage
    publish_now: Publish
    audience: Audience
    saved: Saved
    remember: Remember
    streaming: dict[int, Item] = attrs.Factory(dict)  # itemIndex -> item being produced
    next_index: int = 0
    # in order: commits under way (None: not asked for yet), each with what reports it once done, and
    # events held behind them (with `_ready`: nothing to wait for)
    deferred: list[tuple[asyncio.Future[None] | None, Callable[[], None]]] = attrs.Factory(list)
    saving: set[int] = attrs.Factory(set)  # itemIndexes saved, not yet reported (still streaming)
    _ready: asyncio.Future[None] | None = None
    _settling: int = 0  # `settle` calls under way: they report what lands, with what follows
    # per itemIndex streaming: (loop time of its last save, or its start; characters grown since)
    _growth: dict[int, tuple[float, int]] = attrs.Factory(dict)
    _save_timer: asyncio.TimerHandle | None = None

    def publish(self, event: Any) -> None:
        """Publishes the event now, or, while a report waits for its commit, right after it."""
        if not self.deferred:
            self.publish_now(event)
            return
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._ready.set_result(None)
        self.deferred.append((self._ready, functools.partial(self.audience(), event)))

    def check(self) -> None:
        """Raises the error of a commit that failed: the turn does not go on unsaved."""
        if self.deferred:
            committing = self.deferred[0][0]
            if committing is not None and committing.done() and not committing.cancelled():
                error = committing.exception()
                if error is not None:
                    raise error

    def unsaved(self) -> list[int]:
        """The itemIndexes still being produced (not those already on their way to the log)."""
        return sorted(index for index in self.streaming if index not in self.saving)

    def snapshot(self) -> list[StreamingItem]:
        return [StreamingItem(item_index=i, item=item) for i, item in sorted(self.streaming.items())]

    def new(self, kind: ItemType, **fields: Any) -> Item:
        """An item of the turn, as it starts (streaming)."""
        return Item(
            id=new_id("item"),
            conversation_id=self.turn.conversation_id,
            session_id=self.turn.session_id,
            turn_id=self.turn.id,
            type=kind,
            status=ItemStatus.STREAMING,
            created_at=utcnow(),
            **fields,
        )

    def start(self, kind: ItemType, **fields: Any) -> int:
        index = self.next_index
        self.next_index += 1
        item = self.streaming[index] = self.new(kind, **fields)
        self.publish(events.ItemStarted(item_index=index, item=copy.deepcopy(item)))
        return index

    async def add_later(self, item: Item, started: Item) -> None:
        """An item made whole while what came before it is still committing (a quick tool's result):
        it joins the history at once and the log with the next commit (asked for by `commit` or
        `settle`), and is reported once that is done, started (as `started`) and saved in one step,
        as `start` and `complete_many` would have reported it, so the turn goes on without waiting
        for the commits ahead."""
        index = self.next_index
        self.next_index += 1
        item.status = ItemStatus.COMPLETED
        ordinal = await self.storage.append_item(item)
        self.remember(item)

        def report() -> None:  # a report runs in its turn: it publishes at once
            self.publish_now(events.ItemStarted(item_index=index, item=started))
            self.saved(ordinal, item, remembered=True)

        self.defer(report, now=False)

    def start_text(self, kind: ItemType) -> int:
        return self.start(kind, content=[Content(type="text", text="")])

    def append_text(self, index: int, text: str) -> None:
        item = self.streaming[index]
        assert item.content
        content = item.content[0]
        # Taken out of its object while it grows, the string is referenced once and CPython extends
        # it in place; `content.text = content.text + text` copied the whole answer at every delta,
        # quadratic in its length: 50,000 deltas took 997 ms, in place 102 ms (measured, publishing
        # included). A string someone else holds is copied, as before.
        grown = content.text or ""
        content.text = None
        grown += text
        content.text = grown
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=text))
        self._grew(index, len(text))

    def append_arguments(self, index: int, fragment: str) -> None:
        item = self.streaming[index]
        call = item.tool_call
        assert call is not None
        grown = call.arguments  # grows in place, as in `append_text`
        call.arguments = ""
        grown += fragment
        call.arguments = grown
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=fragment))
        self._grew(index, len(fragment))

    # Saving what streams

    def _grew(self, index: int, size: int) -> None:
        now = asyncio.get_running_loop().time()
        since, grown = self._growth.get(index, (now, 0))
        grown += size
        if grown >= SAVE_EVERY_CHARS:
            self.keep(index, now)
            return
        self._growth[index] = (since, grown)
        if self._save_timer is None:
            self._arm(since + SAVE_EVERY_SECONDS)

    def keep(self, index: int, now: float | None = None) -> None:
        """Saves the item as it is now (it goes on streaming): a tool call whose arguments are whole
        but which waits to run, say."""
        item = self.streaming.get(index)
        if item is None or index in self.saving:  # logged, or on its way there: no row to leave behind
            self._growth.pop(index, None)
            return
        self._growth[index] = (asyncio.get_running_loop().time() if now is None else now, 0)
        self.storage.save_streaming(item)

    def _arm(self, at: float) -> None:
        self._save_timer = asyncio.get_running_loop().call_at(at, self._save_due)

    def _save_due(self) -> None:
        self._save_timer = None
        now = asyncio.get_running_loop().time()
        try:
            for index, (since, grown) in list(self._growth.items()):
                if grown and since + SAVE_EVERY_SECONDS <= now:
                    self.keep(index, now)
        except Exception:
            # a broken store: the turn's own next commit fails with it (`check`); this save only helps
            log.warning("turn %s: an item streaming could not be saved", self.turn.id, exc_info=True)
            return
        waiting = [since for since, grown in self._growth.values() if grown]
        if waiting:
            self._arm(min(waiting) + SAVE_EVERY_SECONDS)

    def stop_saving(self) -> None:
        """The turn ends: what still streams is logged by now, nothing more is saved."""
        self._growth.clear()
        if self._save_timer is not None:
            self._save_timer.cancel()
            self._save_timer = None

    async def complete_many(
        self, indexes: list[int], status: ItemStatus, *, later: bool = False, now: bool = True
    ) -> list[Item]:
        """Saves the items in one commit (not one each), then reports them saved, in order; with
        `later`, the turn goes on while they commit (see the module's note), and without `now` the
        commit is not even asked for: they go with whatever the turn commits next."""
        staged = []
        for index in indexes:
            if index in self.saving:
                continue  # saved already, its report under way
            self.saving.add(index)
            self._growth.pop(index, None)  # logged: its saved row goes with that commit
            item = self.streaming[index]
            item.status = status
            staged.append((index, item, await self.storage.append_item(item)))
            if later:
                self.remember(item)

        def report() -> None:
            for index, item, ordinal in staged:
                # removed from the streaming set and reported saved in one step: snapshots stay exact
                del self.streaming[index]
                self.saving.discard(index)
                self.saved(ordinal, item, remembered=later)

        if staged:
            self.defer(report, now=now or not later)
            if not later:
                await self.settle()
        return [item for _, item, _ in staged]

    def defer(self, report: Callable[[], None], *, now: bool = True) -> asyncio.Future[None] | None:
        """Runs `report` once what is queued is committed; the commit, asked for now, or, without
        `now`, by the next `commit` or `settle`."""
        committing = self._flush() if now else None
        self.deferred.append((committing, report))
        return committing

    def commit(self) -> None:
        """Asks for the commit of what waits for one (deferred without `now`): one commit for all."""
        waiting = [i for i, (committing, _) in enumerate(self.deferred) if committing is None]
        if waiting:
            committing = self._flush()
            for i in waiting:
                self.deferred[i] = (committing, self.deferred[i][1])

    def _flush(self) -> asyncio.Future[None]:
        committing = asyncio.ensure_future(self.storage.flush())
        # its reports run as soon as it ends, unless the turn waits for it: then right after, with
        # what the turn publishes next (the turn's end: itemCompleted and turnCompleted in one
        # notification, not two)
        committing.add_done_callback(self._landed)
        return committing

    def _landed(self, _: asyncio.Future[None]) -> None:
        if not self._settling:
            self._report()

    async def settle(self) -> None:
        """Waits for the commits under way and reports them, in order (and the events behind them)."""
        self._settling += 1
        try:
            while self.deferred:
                self.commit()  # what waits for a commit gets one (reports deferred meanwhile included)
                committing = self.deferred[0][0]
                assert committing is not None
                await asyncio.shield(committing)  # the commit goes on (and is reported) even if the turn stops
                self._report()
        finally:
            self._settling -= 1
            if not self._settling:
                self._report()  # a settle stopped (`tool_calls._first_of`) after its commit landed

    def _report(self) -> None:
        """Runs the reports whose commits are done, and the events behind them, in order; stops at a
        commit still under way or failed (`settle` and `check` raise its error)."""
        while self.deferred:
            committing, report = self.deferred[0]
            if committing is None or not committing.done() or committing.cancelled() or committing.exception():
                return
            self.deferred.pop(0)
            report()

    async def complete_all(self, status: ItemStatus) -> list[Item]:
        return await self.complete_many(self.unsaved(), status)

    async def append(self, item: Item) -> None:
        """An item made whole at once (a hook's message) goes straight to the log, reported after
        what came before it."""
        ordinal = await self.storage.append_item(item, durable=True)
        await self.settle()
        self.saved(ordinal, item)
