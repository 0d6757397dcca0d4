"""A session's token accounting: what its model calls used, and how full the next request's context
will be (the last call's actual usage plus estimates of what was added since)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from openvaala_lsp.model import ContextUsage, ContextUsageSource, Item, ModelCall, TokenUsage
from openvaala_lsp.runtime import context


@attrs.define(eq=False)
class SessionUsage:
    usage: TokenUsage = attrs.Factory(TokenUsage)
    context: ContextUsage = attrs.Factory(ContextUsage)
    last: tuple[ModelCall, int] | None = None  # the last call, and how many history items it saw

    @property
    def last_call(self) -> ModelCall | None:
        return self.last[0] if self.last else None

    def record(
        self,
        call: ModelCall,
        reported: TokenUsage | None,
        history: Sequence[Item],
        produced: Iterable[Item],
        window: int,
    ) -> None:
        """Accounts for one finished (or cut) model call. Usage the provider did not report (llama.cpp
        while streaming, a cut stream) is estimated from what was sent and what came back."""
        if reported is not None:
            call.usage = reported
        else:
            call.usage_estimated = True
            prompt = sum(context.estimate_item(item) for item in history)
            output = sum(context.estimate_item(item) for item in produced)
            call.usage = TokenUsage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)
        self.usage = self.usage + call.usage
        self.last = (call, len(history))
        self.context = ContextUsage(
            source=ContextUsageSource.ESTIMATED if call.usage_estimated else ContextUsageSource.ACTUAL,
            tokens=call.usage.input_tokens + call.usage.output_tokens,
            window=window,
        )

    def next_request(self, history: Sequence[Item], window: int) -> ContextUsage:
        """Context the next request will use; `unknown` before any call."""
        if self.last is None:
            return ContextUsage(source=ContextUsageSource.UNKNOWN, tokens=0, window=window)
        call, seen = self.last
        added = sum(context.estimate_item(item) for item in history[seen:])
        base = call.usage.input_tokens + call.usage.output_tokens
        source = ContextUsageSource.ACTUAL if not added and not call.usage_estimated else ContextUsageSource.ESTIMATED
        return ContextUsage(source=source, tokens=base + added, window=window)
