"""Turning provider failures into `ProviderError` kinds.

The payload decides before the status does: a 429 may be a rate limit (retry) or an exhausted quota
(never retry), a 400 may be a context overflow (compact), and a mid-stream `overloaded_error` arrives
inside an HTTP 200.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openvaala_lsp.providers.base import ProviderError

RATE_LIMITED = "rateLimited"
INSUFFICIENT_QUOTA = "insufficientQuota"
AUTHENTICATION = "authentication"
BAD_REQUEST = "badRequest"
NOT_FOUND = "notFound"
CONTEXT_LENGTH_EXCEEDED = "contextLengthExceeded"
OVERLOADED = "overloaded"
SERVER_ERROR = "serverError"
CONNECTION = "connection"
TIMEOUT = "timeout"
STREAM_INCOMPLETE = "streamIncomplete"
STREAM_ERROR = "streamError"

# Kinds worth another attempt, now or (for mid-stream failures) by the turn engine restarting the call.
TRANSIENT_KINDS = frozenset({RATE_LIMITED, OVERLOADED, SERVER_ERROR, CONNECTION, TIMEOUT, STREAM_INCOMPLETE})

# error.code / error.type tokens of OpenAI, Anthropic and compatible servers, most specific first.
_TOKEN_KINDS: tuple[tuple[frozenset[str], str], ...] = (
    (
        frozenset(
            {
                "insufficient_quota",
                "credit_balance_exhausted",
                "project_spend_limit_exceeded",
                "billing_hard_limit_reached",
                "billing_not_active",
            }
        ),
        INSUFFICIENT_QUOTA,
    ),
    (frozenset({"context_length_exceeded", "model_context_window_exceeded"}), CONTEXT_LENGTH_EXCEEDED),
    (frozenset({"rate_limit_exceeded", "rate_limit_error"}), RATE_LIMITED),
    (frozenset({"overloaded_error", "overloaded", "server_is_overloaded", "slow_down"}), OVERLOADED),
    (
        frozenset(
            {"authentication_error", "permission_error", "invalid_api_key", "invalid_authentication", "unauthorized"}
        ),
        AUTHENTICATION,
    ),
    (frozenset({"not_found_error", "model_not_found"}), NOT_FOUND),
)
# Generic tokens that only decide when the status (if any) did not.
_GENERIC_TOKEN_KINDS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"invalid_request_error", "invalid_prompt", "request_too_large", "invalid_value"}), BAD_REQUEST),
    (frozenset({"server_error", "api_error", "internal_error", "internal_server_error"}), SERVER_ERROR),
    (frozenset({"timeout_error", "timeout"}), TIMEOUT),
)
# Message phrases of servers that report context overflow without a code (Anthropic, llama.cpp, vLLM).
_CONTEXT_PHRASES = ("prompt is too long", "maximum context length", "context length exceeded", "context window")
# Anthropic reports an empty balance as a plain 400 invalid_request_error.
_QUOTA_PHRASES = ("credit balance is too low", "exceeded your current quota")


class DeadlineExceeded(ProviderError):
    """A `timeout` ProviderError that says which deadline ran out: connect, pool, write, read,
    firstEvent (request sent, no event yet) or idle (no event for too long after the first)."""

    def __init__(self, deadline: str, seconds: float | None, *, retryable: bool = True) -> None:
        limit = f" ({seconds:g} s)" if seconds is not None else ""
        super().__init__(TIMEOUT, f"{_DEADLINE_TEXT.get(deadline, deadline)}{limit}", retryable=retryable)
        self.deadline = deadline


_DEADLINE_TEXT = {
    "connect": "timed out connecting to the model provider",
    "pool": "timed out waiting for a free connection",
    "write": "timed out sending the request",
    "read": "timed out reading from the model provider",
    "firstEvent": "the model provider sent no event in time",
    "idle": "the model stream went idle",
}


def error_fields(payload: Any) -> tuple[list[str], str]:
    """The (code, type) tokens and the message of an error payload in any of the dialects' shapes:
    `{"error": {...}}`, `{"type": "error", "error": {...}}`, a bare `{code, message}` object, or
    Ollama's `{"error": "text"}`."""
    if isinstance(payload, Mapping) and "error" in payload:
        inner = payload["error"]
        if isinstance(inner, str):
            return [], inner
        if isinstance(inner, Mapping):
            payload = inner
    if not isinstance(payload, Mapping):
        return [], ""
    tokens = [str(payload[key]).lower() for key in ("code", "type") if isinstance(payload.get(key), str | int)]
    message = payload.get("message")
    return tokens, message if isinstance(message, str) else ""


def kind_for(status: int | None, tokens: list[str], message: str) -> str:
    """The ProviderError kind for an error's HTTP status (None inside a stream), tokens and message."""
    for names, kind in _TOKEN_KINDS:
        if any(token in names for token in tokens):
            return kind
    lowered = message.lower()
    if any(phrase in lowered for phrase in _QUOTA_PHRASES):
        return INSUFFICIENT_QUOTA
    if any(phrase in lowered for phrase in _CONTEXT_PHRASES):
        return CONTEXT_LENGTH_EXCEEDED
    if status is not None:
        by_status = _status_kind(status)
        if by_status is not None:
            return by_status
    for names, kind in _GENERIC_TOKEN_KINDS:
        if any(token in names for token in tokens):
            return kind
    return STREAM_ERROR if status is None else SERVER_ERROR


def _status_kind(status: int) -> str | None:
    if status in (401, 403):
        return AUTHENTICATION
    if status == 404:
        return NOT_FOUND
    if status == 408:
        return TIMEOUT
    if status == 429:
        return RATE_LIMITED
    if status == 529:
        return OVERLOADED
    if status >= 500 or status == 409:
        return SERVER_ERROR
    if 400 <= status < 500:
        return BAD_REQUEST
    return None


def http_error(status: int, body: bytes) -> ProviderError:
    """The error for a non-2xx response; `retryable` is left for the retry policy to decide."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        payload = None
    tokens, message = error_fields(payload)
    if not message:
        message = body.decode("utf-8", errors="replace").strip()[:500] or "no error details"
    kind = kind_for(status, tokens, message)
    return ProviderError(kind, f"HTTP {status}: {message}", status=status, retryable=kind in TRANSIENT_KINDS)


def stream_error(payload: Any) -> ProviderError:
    """The error for an error event inside a started (HTTP 200) stream."""
    tokens, message = error_fields(payload)
    kind = kind_for(None, tokens, message)
    return ProviderError(
        kind, f"error in model stream: {message or 'no error details'}", retryable=kind in TRANSIENT_KINDS
    )
