"""A model call's record, and the text-only calls beside a turn's own answer (a compaction's hand-off,
a conversation's title): each is logged as a ModelCall with its latency, and its error if it fails,
whatever happens to it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import attrs

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import ModelCall, ModelCallPurpose, TokenUsage, Turn, new_id, utcnow
from openvaala_lsp.providers import base as provider_events
from openvaala_lsp.providers.base import ModelRequest, Provider


def new_record(
    turn: Turn, model: ModelDefinition, workspace: str | None, purpose: ModelCallPurpose, **fields: Any
) -> ModelCall:
    """The record of a call made for `turn` to `model`, started now."""
    return ModelCall(
        id=new_id("call"),
        conversation_id=turn.conversation_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        provider=model.ref.provider,
        model=model.ref.name,
        started_at=utcnow(),
        workspace=workspace,
        purpose=purpose,
        price=model.price,
        **fields,
    )


def failure(exc: BaseException) -> str:
    """What a call's record says of the exception that ended it."""
    return "interrupted" if isinstance(exc, asyncio.CancelledError) else f"{type(exc).__name__}: {exc}"


@attrs.define
class TextCall:
    """One text-only call: the text streamed so far (kept when the call fails midway) and the usage
    the provider reported, if it did."""

    record: ModelCall
    parts: list[str] = attrs.Factory(list)
    usage: TokenUsage | None = None
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    async def run(self, provider: Provider, request: ModelRequest) -> None:
        started = time.monotonic()
        try:
            async with contextlib.aclosing(provider.stream(request)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if isinstance(event, provider_events.TextDelta):
                        self.parts.append(event.text)
                    elif isinstance(event, provider_events.Completed):
                        self.usage = event.usage
                        self.finish_reason = event.finish_reason
        except BaseException as exc:
            self.record.error = failure(exc)
            raise
        finally:
            self.record.latency_ms = int((time.monotonic() - started) * 1000)
