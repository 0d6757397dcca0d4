"""Retry policy for failures before a stream starts, modelled on the official OpenAI/Anthropic SDKs.

Rules, in order:
1. Never retry insufficient quota, authentication, context length exceeded, or statuses 400, 401,
   403, 404 and 413 — not even when the server sends `x-should-retry: true`.
2. Otherwise `x-should-retry: true|false` decides when present.
3. Otherwise retry connection failures and timeouts before a response, and statuses 408, 409, 429
   and >= 500 (529 included).
At most `max_retries` retries (3 attempts by default). The delay is the server's `retry-after-ms`,
else `retry-after` (seconds or an HTTP date), when it is in (0, `max_retry_after`]; a server asking
for a longer wait gets no retry at all — the error surfaces at once (still `retryable`) so the turn
engine or the user decides instead of a silent multi-minute sleep. Without a usable hint the delay is
`min(0.5 * 2**n, 8)` seconds times a jitter factor in (0.75, 1], n being the retries so far.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping

import attrs

from openvaala_lsp.providers.errors import AUTHENTICATION, CONTEXT_LENGTH_EXCEEDED, INSUFFICIENT_QUOTA

RETRYABLE_STATUSES = frozenset({408, 409, 429})
NEVER_RETRY_STATUSES = frozenset({400, 401, 403, 404, 413})
NEVER_RETRY_KINDS = frozenset({INSUFFICIENT_QUOTA, AUTHENTICATION, CONTEXT_LENGTH_EXCEEDED})


def _default_jitter() -> float:
    return 1.0 - 0.25 * random.random()  # in (0.75, 1.0]


@attrs.frozen(kw_only=True)
class RetryPolicy:
    max_retries: int = 2
    max_retry_after: float = 60.0
    # Injected so tests neither wait nor depend on randomness.
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[], float] = _default_jitter
    clock: Callable[[], float] = time.time  # wall clock, only to read HTTP-date retry-after values

    def backoff(self, retries_so_far: int) -> float:
        return min(0.5 * 2.0**retries_so_far, 8.0) * self.jitter()

    def delay(
        self, retries_so_far: int, *, kind: str, status: int | None, headers: Mapping[str, str] | None
    ) -> float | None:
        """Seconds to wait before the next attempt, or None when this failure must not be retried."""
        if retries_so_far >= self.max_retries or kind in NEVER_RETRY_KINDS or status in NEVER_RETRY_STATUSES:
            return None
        should_retry = (headers or {}).get("x-should-retry", "").strip().lower()
        if should_retry == "false":
            return None
        if should_retry != "true" and status is not None and not _retryable_status(status):
            return None
        hint = retry_after_seconds(headers or {}, self.clock)
        if hint is not None and hint > 0:
            return hint if hint <= self.max_retry_after else None
        return self.backoff(retries_so_far)


def _retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str], clock: Callable[[], float] = time.time) -> float | None:
    """The server's requested delay: `retry-after-ms`, else `retry-after` as seconds or HTTP date."""
    milliseconds = _finite(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" zones parse as naive; HTTP dates are always UTC
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp() - clock()


def _finite(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None
