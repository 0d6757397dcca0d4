"""The provider contract: a neutral request in, a stream of neutral events out.

Providers know nothing of conversations, storage or JSON-RPC. The turn engine builds a
`ModelRequest` from a session's items and consumes `StreamEvent`s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import attrs

from openvaala_lsp.model import Content, TokenUsage, ToolCall


@attrs.define(kw_only=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@attrs.define(kw_only=True)
class Message:
    """One history entry. `role` is "user", "assistant" or "tool".

    user: `content` (text and images). assistant: `content` text, `tool_calls`, and `reasoning`
    (opaque provider data to send back unchanged, e.g. Anthropic thinking blocks with signatures or
    Responses reasoning items). tool: `tool_call_id`, `name`, `content`, `is_error`.
    """

    role: str
    content: list[Content] = attrs.Factory(list)
    tool_calls: list[ToolCall] = attrs.Factory(list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: list[dict[str, Any]] | None = None


@attrs.define(kw_only=True)
class ModelRequest:
    model: str
    instructions: str = ""
    messages: list[Message] = attrs.Factory(list)
    tools: list[ToolSpec] = attrs.Factory(list)
    max_output_tokens: int | None = None
    reasoning_effort: str | None = None


# Stream events, in the order a provider yields them.


@attrs.define(kw_only=True)
class TextDelta:
    text: str


@attrs.define(kw_only=True)
class ReasoningDelta:
    text: str


@attrs.define(kw_only=True)
class ReasoningDone:
    """Opaque provider data of one reasoning block, to be sent back in the next request."""

    data: dict[str, Any]


@attrs.define(kw_only=True)
class ToolCallStarted:
    index: int
    call_id: str
    name: str


@attrs.define(kw_only=True)
class ToolCallDelta:
    index: int
    arguments: str  # a fragment of the JSON text


@attrs.define(kw_only=True)
class ToolCallDone:
    index: int
    call: ToolCall  # complete: id, name, full arguments JSON text


@attrs.define(kw_only=True)
class Completed:
    finish_reason: str  # "stop", "tool_calls", "length", "content_filter", ...
    usage: TokenUsage | None = None  # None when the provider reported none


StreamEvent = TextDelta | ReasoningDelta | ReasoningDone | ToolCallStarted | ToolCallDelta | ToolCallDone | Completed


def delta_text(event: StreamEvent) -> str:
    """What a delta adds (its text, or its piece of a tool call's arguments); "" for other events."""
    if isinstance(event, ToolCallDelta):
        return event.arguments
    return event.text if isinstance(event, (TextDelta, ReasoningDelta)) else ""


class ProviderError(Exception):
    """A failed model call. `kind` is one of: rateLimited, insufficientQuota, authentication,
    badRequest, notFound, contextLengthExceeded, overloaded, serverError, connection, timeout,
    streamIncomplete, streamError."""

    def __init__(self, kind: str, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retryable = retryable


class Provider(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Streams one model call. Retries failures that happen before the stream starts; raises
        ProviderError otherwise. Cancelling the consuming task closes the connection at once."""
        ...

    async def aclose(self) -> None: ...
