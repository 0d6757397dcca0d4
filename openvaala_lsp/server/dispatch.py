"""The translation between wire JSON and runtime calls, free of any transport: a request's params
structured into its params type, the runtime method called, its result unstructured or its error
turned into the wire's error; a subscription's events turned into notifications.

The editor connection (`connection.py`) uses it; the in-process test harness uses the very same code, so
what a test sees is what an editor gets, minus the framing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from openvaala_lsp.model import ErrorInfo, Item, encoded_size
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.codes import CODES, INTERNAL_ERROR, INVALID_PARAMS
from openvaala_lsp.protocol.converter import ParamsError, structure, unstructure
from openvaala_lsp.protocol.errors import InvalidParams, RuntimeApiError, RuntimeStopped
from openvaala_lsp.protocol.methods import PREFIX, RequestSpec
from openvaala_lsp.runtime import subscriptions
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.server import messages
from openvaala_lsp.server.protocol import WireError
from openvaala_lsp.storage.errors import StorageError
from openvaala_lsp.wire import framing

logger = logging.getLogger(__name__)

NOTIFY = {
    subscriptions.CONVERSATION: PREFIX + "conversationEvent",
    subscriptions.SESSION: PREFIX + "sessionEvent",
    subscriptions.RUNNING: PREFIX + "runningConversations",
}
SUBSCRIPTION_CLOSED = PREFIX + "subscriptionClosed"


def params_error(method: str, problems: list[str]) -> WireError:
    problems = messages.bounded_problems(problems)
    message = f"invalid params for {method}: {'; '.join(problems)}"
    return WireError(INVALID_PARAMS, message, {"kind": "invalidParams", "errors": problems})


def runtime_error(error: RuntimeApiError) -> WireError:
    data = {key: unstructure(value) for key, value in error.data().items()}
    return WireError(CODES.get(error.kind, INTERNAL_ERROR), error.message, {**data, "kind": error.kind})


async def dispatch(runtime: Runtime, client: Client, spec: RequestSpec, params: Any) -> Any:
    """The wire result of one request; raises WireError."""
    try:
        typed: Any = structure({} if params is None else params, spec.params)
    except ParamsError as exc:
        raise params_error(spec.method, exc.problems) from None
    try:
        result = await getattr(runtime, spec.runtime)(client, typed)
    except InvalidParams as exc:
        raise params_error(spec.method, [exc.message]) from None
    except RuntimeApiError as exc:
        raise runtime_error(exc) from None
    except StorageError as exc:  # the history cannot serve it (closed, out of memory): say why
        logger.exception("%s failed", spec.method)
        raise WireError(INTERNAL_ERROR, f"{spec.method} failed: {exc}", {"kind": "internal"}) from None
    except Exception:
        logger.exception("%s failed", spec.method)
        raise WireError(INTERNAL_ERROR, f"internal error in {spec.method}", {"kind": "internal"}) from None
    return unstructure(result)


def coalesce(batch: list[Any]) -> list[Any]:
    """Merges consecutive deltas of one item; the result describes exactly the same state. A run of
    deltas is joined once (a notification may carry 500 of them: one event and one join, not 500)."""
    merged: list[Any] = []
    run: list[str] = []  # the texts of the deltas merged[-1] stands for, while it is a delta
    for event in batch:
        if type(event) is events.ItemDelta:
            if run and merged[-1].item_id == event.item_id:
                run.append(event.delta)
                continue
            _end_run(merged, run)
            run = [event.delta]
        else:
            _end_run(merged, run)
            run = []
        merged.append(event)
    _end_run(merged, run)
    return merged


def _end_run(merged: list[Any], run: list[str]) -> None:
    if len(run) > 1:
        first = merged[-1]
        merged[-1] = events.ItemDelta(item_index=first.item_index, item_id=first.item_id, delta="".join(run))


def notifications(
    sub: Subscription, seq: int, batch: list[Any], max_bytes: int | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(method, params) of the notifications carrying `batch`, numbered from `seq` + 1: a session's
    events travel together (deltas coalesced), as few notifications as keep each under the message
    limit (`max_bytes`; eleven items with screenshots made one of 69 MiB); other subscriptions send
    one event per notification."""
    method = NOTIFY[sub.kind]
    if sub.kind == subscriptions.SESSION:
        budget = max_bytes if max_bytes is not None else framing.max_message_bytes() - NOTIFICATION_ENVELOPE
        for part in _under(coalesce(batch), budget):
            seq += 1
            yield method, {"subscriptionId": sub.id, "seq": seq, "events": unstructure(part)}
        return
    for event in batch:
        seq += 1
        payload = {"event": unstructure(event)} if sub.kind == subscriptions.CONVERSATION else unstructure(event)
        yield method, {"subscriptionId": sub.id, "seq": seq, **payload}


NOTIFICATION_ENVELOPE = 64 * 1024  # the frame, the keys around the events, with room to spare
EVENT_ALLOWANCE = 1024  # an event's own keys, ids, times and small values


def _under(events: list[Any], budget: int) -> Iterator[list[Any]]:
    """`events` in runs whose JSON stays within `budget` (a run holds one event at least)."""
    run: list[Any] = []
    used = 0
    for event in events:
        size = _event_size(event)
        if run and used + size > budget:
            yield run
            run, used = [], 0
        run.append(event)
        used += size
    if run:
        yield run


def _event_size(event: Any) -> int:
    """At least the bytes of the event as JSON, from its big parts (an item, a delta, arguments)."""
    if isinstance(item := getattr(event, "item", None), Item):
        return EVENT_ALLOWANCE + encoded_size(item)
    if type(event) is events.ItemDelta:
        return EVENT_ALLOWANCE + len(json.dumps(event.delta))
    if type(event) is events.ApprovalRequested:
        return EVENT_ALLOWANCE + len(json.dumps(unstructure(event.approval)))
    if type(event) is events.ErrorEvent:
        return EVENT_ALLOWANCE + len(json.dumps(event.error.message))
    return EVENT_ALLOWANCE


def closed_notification(sub: Subscription) -> tuple[str, dict[str, Any]]:
    reason = sub.close_reason or ErrorInfo(kind=RuntimeStopped.kind, message=RuntimeStopped.default_message)
    return SUBSCRIPTION_CLOSED, {"subscriptionId": sub.id, "reason": unstructure(reason)}
