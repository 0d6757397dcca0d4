"""A subscription's buffer as the connection drains it: deltas may wait a moment to ride along in one
notification, anything else the editor is waiting for (an item saved, the turn's end, an approval
asked, the close) never waits."""

from __future__ import annotations

import asyncio

from openvaala_lsp.model import ErrorInfo, SessionState
from openvaala_lsp.protocol.events import ItemDelta, StateChanged
from openvaala_lsp.runtime.subscriptions import SESSION, Subscription
from openvaala_lsp.server.dispatch import coalesce

FOREVER = 3600.0  # a hold this long would outlast the test: returning at all is the assertion


def delta(text: str) -> ItemDelta:
    return ItemDelta(item_index=0, item_id="item_1", delta=text)


async def still_holding(hold: asyncio.Task[None]) -> bool:
    for _ in range(5):  # let the loop run whatever the publish woke
        await asyncio.sleep(0)
    return not hold.done()


async def test_a_delta_keeps_the_hold_and_any_other_event_ends_it() -> None:
    sub = Subscription(SESSION, "client")
    sub.publish(delta("a"))
    assert await sub.next_batch(10) == [delta("a")]
    hold = asyncio.create_task(sub.hold(FOREVER))
    sub.publish(delta("b"))
    assert await still_holding(hold)
    sub.publish(StateChanged(state=SessionState.IDLE))
    await asyncio.wait_for(hold, FOREVER)
    assert await sub.next_batch(10) == [delta("b"), StateChanged(state=SessionState.IDLE)]


async def test_no_hold_when_the_batch_taken_holds_another_event() -> None:
    sub = Subscription(SESSION, "client")
    sub.publish(delta("a"))
    sub.publish(StateChanged(state=SessionState.IDLE))
    await sub.next_batch(10)
    await asyncio.wait_for(sub.hold(FOREVER), FOREVER)  # returns at once
    sub.publish(delta("b"))
    await sub.next_batch(10)  # deltas alone: the next hold waits again
    hold = asyncio.create_task(sub.hold(FOREVER))
    assert await still_holding(hold)
    hold.cancel()


async def test_closing_ends_a_hold() -> None:
    sub = Subscription(SESSION, "client")
    sub.publish(delta("a"))
    await sub.next_batch(10)
    hold = asyncio.create_task(sub.hold(FOREVER))
    assert await still_holding(hold)
    sub.close(ErrorInfo(kind="runtimeStopped", message="stopped"))
    await asyncio.wait_for(hold, FOREVER)
    assert await sub.next_batch(10) == []


def test_coalesce_joins_each_run_of_one_items_deltas_and_keeps_everything_else_in_place() -> None:
    other = ItemDelta(item_index=1, item_id="item_2", delta="x")
    idle = StateChanged(state=SessionState.IDLE)
    batch = [delta("a"), delta("b"), delta("c"), other, delta("d"), idle, delta("e"), delta("f"), other]
    assert coalesce(batch) == [delta("abc"), other, delta("d"), idle, delta("ef"), other]
    assert coalesce([]) == [] and coalesce([idle]) == [idle] and coalesce([delta("a")]) == [delta("a")]
    assert batch[0] == delta("a")  # the events published are left as they were
