"""The runtime's side of telemetry: spans it opens at its boundaries and ends with what happened.

The runtime holds a `Telemetry` and knows nothing of OpenTelemetry. Off (the default), every call
lands on `NOTHING`, one shared object whose methods do nothing and return it: no import, no
allocation per span. Implementations never raise into the runtime and never block it."""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Protocol

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import CompactionTrigger, Item, ModelCall, ToolCall, Turn
from openvaala_lsp.providers.base import ModelRequest


class ModelCallSpan(Protocol):
    def finish(self, record: ModelCall, finish_reason: str | None, output: Sequence[Item]) -> None:
        """The call ended: its record (tokens, latency, error), why the model stopped, what it wrote."""


class ToolCallSpan(Protocol):
    def finish(self, text: str, *, is_error: bool) -> None:
        """The call ended with this result (what the model reads)."""


class Span(Protocol):
    def end(self, error: str | None = None) -> None: ...


class Parent(Protocol):
    """A span that holds the calls made within it: a turn, a compaction."""

    def model_call(self, model: ModelDefinition, request: ModelRequest) -> ModelCallSpan: ...

    def tool_call(self, call: ToolCall) -> ToolCallSpan: ...

    def hook(self, event: str) -> Span: ...

    def compaction(self, trigger: CompactionTrigger) -> CompactionSpan: ...


class CompactionSpan(Parent, Span, Protocol):
    pass


class TurnSpan(Parent, Protocol):
    def finish(self, turn: Turn) -> None:
        """The turn ended (its status, reason, error and usage are final)."""


class Telemetry(Protocol):
    def turn(self, turn: Turn, agent: str, within: ToolCallSpan | None = None) -> TurnSpan:
        """A turn's span; `within`: the tool call that started it (a sub-agent's task), else a trace."""

    def close(self) -> None:
        """Sends what is buffered and stops, within seconds; blocking: call it off the event loop."""


class Nothing:
    """Telemetry off: every span is this object, and nothing is recorded."""

    def turn(self, turn: Turn, agent: str, within: ToolCallSpan | None = None) -> Nothing:
        return self

    def close(self) -> None:
        pass

    def model_call(self, model: ModelDefinition, request: ModelRequest) -> Nothing:
        return self

    def tool_call(self, call: ToolCall) -> Nothing:
        return self

    def hook(self, event: str) -> Nothing:
        return self

    def compaction(self, trigger: CompactionTrigger) -> Nothing:
        return self

    def finish(self, *args: object, **kwargs: object) -> None:
        pass

    def end(self, error: str | None = None) -> None:
        pass


NOTHING = Nothing()

# the tool call whose task runs now (set around its start, so only that task sees it): a sub-agent's
# turn started by it is its child, in the parent turn's trace
CALLING: contextvars.ContextVar[ToolCallSpan | None] = contextvars.ContextVar("openvaala_tool_call", default=None)
