"""Subscriptions: a bounded event buffer per subscriber.

Publishing never blocks the runtime: when a subscriber's buffer is full (its client stopped
reading) the subscription closes with `subscriberTooSlow` and the events are dropped for it alone.
The transport side drains buffers with `next_batch`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
from collections.abc import Callable
from typing import Any

from openvaala_lsp.model import ErrorInfo
from openvaala_lsp.protocol.errors import InvalidParams, SubscriberTooSlow
from openvaala_lsp.protocol.events import ItemDelta

DEFAULT_CAPACITY = 10_000

_ids = itertools.count(1)

CONVERSATION = "conversation"
SESSION = "session"
RUNNING = "running"


class Subscription:
    def __init__(
        self,
        kind: str,
        owner: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        on_close: Callable[[Subscription], None] | None = None,
        key: Any = None,
        answers_approvals: bool = False,
    ) -> None:
        self.id = f"sub_{next(_ids)}"
        self.kind = kind
        self.owner = owner  # the client that may unsubscribe it
        self.key = key  # what it watches: a conversation id, (conversation id, session id), None
        self.answers_approvals = answers_approvals  # its client declared `approvals`
        self.capacity = capacity
        self.close_reason: ErrorInfo | None = None
        self._events: collections.deque[Any] = collections.deque()
        self._ready = asyncio.Event()
        self._news = asyncio.Event()  # an event other than a delta is queued or taken: send without waiting
        self._on_close = on_close
        # the rest of its snapshot, when one message could not hold it (`snapshots.py`)
        self._pages: collections.deque[Any] = collections.deque()
        self._pages_read = 0

    @property
    def closed(self) -> bool:
        return self.close_reason is not None

    def publish(self, event: Any) -> None:
        if self.close_reason is not None:
            return
        if len(self._events) >= self.capacity:
            self.close(ErrorInfo(kind=SubscriberTooSlow.kind, message=SubscriberTooSlow.default_message), drop=True)
            return
        self._events.append(event)
        self._ready.set()
        if type(event) is not ItemDelta:
            self._news.set()

    def close(self, reason: ErrorInfo, *, drop: bool = False) -> None:
        """Ends the subscription. Events already published are still delivered before the close
        notice, unless `drop` (a subscriber too slow to keep up re-lists and resubscribes instead)."""
        if self.close_reason is not None:
            return
        self.close_reason = reason
        if drop:
            self._events.clear()
        self._ready.set()
        self._news.set()
        if self._on_close is not None:
            self._on_close(self)

    def keep_pages(self, pages: list[Any]) -> str | None:
        """Keeps the pages of its snapshot after the first for `next_page`; the cursor of the next one
        (None: there are none)."""
        self._pages.extend(pages)
        return self._cursor()

    def next_page(self, cursor: str) -> tuple[Any, str | None]:
        """The page `cursor` names (only ever the next one), and the cursor of the one after it."""
        if not self._pages or cursor != self._cursor():
            raise InvalidParams("not the cursor of this subscription's next snapshot page @ $.cursor")
        page = self._pages.popleft()
        self._pages_read += 1
        return page, self._cursor()

    def _cursor(self) -> str | None:
        return f"{self.id}.{self._pages_read + 1}" if self._pages else None

    async def next_batch(self, limit: int) -> list[Any]:
        """Up to `limit` events, waiting for at least one; [] once closed and drained."""
        while not self._events and self.close_reason is None:
            self._ready.clear()
            await self._ready.wait()
        batch = [self._events.popleft() for _ in range(min(limit, len(self._events)))]
        if not self._events and self.close_reason is None and all(type(event) is ItemDelta for event in batch):
            self._news.clear()
        return batch

    async def hold(self, seconds: float) -> None:
        """Waits up to `seconds` for more deltas to ride along with those taken, not at all when an
        event of another kind (an item saved, the turn's end, an approval asked) was taken or is
        queued, or the subscription closed: the editor is waiting for those, not for more text."""
        if self._news.is_set():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._news.wait()

    def pending(self) -> int:
        return len(self._events)
