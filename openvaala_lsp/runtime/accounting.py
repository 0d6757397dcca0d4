"""A session's token accounting: what its model calls used, and how full the next request's context
will be — the tokens the last call reported (or, after a compaction, the estimate of what is left)
plus estimates of what was added since."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from openvaala_lsp.model import ContextUsage, ContextUsageSource, Item, ModelCall, TokenUsage
from openvaala_lsp.runtime import context


@attrs.frozen
class _Base:
    tokens: int
    seen: int  # how many history items it accounts for
    estimated: bool


@attrs.define(eq=False)
class SessionUsage:
    usage: TokenUsage = attrs.Factory(TokenUsage)
    context: ContextUsage = attrs.Factory(ContextUsage)
    last_call: ModelCall | None = None
    _base: _Base | None = None

    def record(
        self,
        call: ModelCall,
        reported: TokenUsage | None,
        history: Sequence[Item],
        produced: Iterable[Item],
        window: int,
        *,
        sent: int | None = None,
        in_context: bool = True,
        answered: bool = True,
    ) -> None:
        """Accounts for one finished (or cut) model call. Usage the provider did not report (llama.cpp
        while streaming, a cut stream) is estimated from what was sent and what came back; a call that
        got no answer at all (an HTTP error, a refused connection) used nothing. A call that is not the
        session's own context (a compaction's hand-off, a title) counts for usage only. `sent`: the
        estimate of the whole request (instructions and tools too), else the history's is used."""
        produced = list(produced)
        if reported is not None:
            call.usage = reported
        elif answered:
            call.usage_estimated = True
            prompt = sent if sent is not None else sum(context.estimate_item(i) for i in context.model_items(history))
            output = sum(context.estimate_item(item) for item in produced)
            call.usage = TokenUsage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)
        self.usage = self.usage + call.usage
        if not in_context or not (answered or reported is not None):
            return
        self.last_call = call
        tokens = call.usage.input_tokens + call.usage.output_tokens
        # the items the call produced are in its output tokens: they are not "added since"
        self._base = _Base(tokens=tokens, seen=len(history) + len(produced), estimated=call.usage_estimated)
        source = ContextUsageSource.ESTIMATED if call.usage_estimated else ContextUsageSource.ACTUAL
        self.context = ContextUsage(source=source, tokens=tokens, window=window)

    def add(self, usage: TokenUsage) -> None:
        """Usage spent on the session's behalf elsewhere (its sub-agents)."""
        self.usage = self.usage + usage

    def rebase(self, tokens: int, history: Sequence[Item], window: int) -> None:
        """After a compaction: the context is what is left, an estimate until the next call reports."""
        self._base = _Base(tokens=tokens, seen=len(history), estimated=True)
        self.context = ContextUsage(source=ContextUsageSource.ESTIMATED, tokens=tokens, window=window)

    def next_request(self, history: Sequence[Item], window: int) -> ContextUsage:
        """Context the next request will use; `unknown` before any call."""
        if self._base is None:
            return ContextUsage(source=ContextUsageSource.UNKNOWN, tokens=0, window=window)
        added = sum(context.estimate_item(item) for item in history[self._base.seen :])
        exact = not added and not self._base.estimated
        source = ContextUsageSource.ACTUAL if exact else ContextUsageSource.ESTIMATED
        return ContextUsage(source=source, tokens=self._base.tokens + added, window=window)
