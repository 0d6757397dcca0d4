"""What the hooks of one event decided, each hook's result merged in definition order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

OUTPUT_CAP = 10_000
"""Characters kept of any string a hook hands back (reason, context, message), as in Claude Code."""


def cap(text: str, limit: int = OUTPUT_CAP) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


@attrs.define(kw_only=True)
class HookOutcome:
    """`blocked` means, by event: preToolUse, the tool call is not made and `reason` is its result
    for the model; postToolUse, the call already ran and `reason` goes to the model with its
    result; userPromptSubmit, the prompt is not processed and `reason` is shown to the user; stop,
    the agent is not allowed to stop and `reason` tells the model why; preCompact, compaction does
    not happen. sessionStart never blocks."""

    blocked: bool = False
    reason: str | None = None  # reasons of every blocking hook, blank-line separated
    additional_context: list[str] = attrs.Factory(list)
    errors: list[str] = attrs.Factory(list)  # non-blocking failures, for the user; each names its hook
    stop: bool = False  # some hook said `continue: false`: end the turn now
    stop_reason: str | None = None  # for the user
    updated_input: dict[str, Any] | None = None  # preToolUse: the tool input to use instead
    system_messages: list[str] = attrs.Factory(list)  # `systemMessage`: warnings for the user
    # preToolUse: "ask" (the user approves first) or "allow" (no asking); a deny is `blocked`
    permission: Literal["ask", "allow"] | None = None
    ask_reason: str | None = None  # why a hook asks, shown to the user


def merge_outcomes(outcomes: Sequence[HookOutcome]) -> HookOutcome:
    """One outcome from several, in the given (definition) order. When several hooks replace the
    tool input, the last one's replacement wins: they all saw the original input, so their edits
    cannot be combined."""
    merged = HookOutcome()
    reasons: list[str] = []
    stop_reasons: list[str] = []
    asks: list[str] = []
    for outcome in outcomes:
        if outcome.blocked:
            merged.blocked = True
            reasons.append(outcome.reason or "")
        if outcome.stop:
            merged.stop = True
            stop_reasons.append(outcome.stop_reason or "")
        merged.additional_context.extend(outcome.additional_context)
        merged.errors.extend(outcome.errors)
        merged.system_messages.extend(outcome.system_messages)
        if outcome.updated_input is not None:
            merged.updated_input = outcome.updated_input
        if outcome.permission == "ask" or (outcome.permission == "allow" and merged.permission is None):
            merged.permission = outcome.permission  # one hook asking outweighs another allowing
        if outcome.ask_reason:
            asks.append(outcome.ask_reason)
    if reasons:
        merged.reason = "\n\n".join(reason for reason in reasons if reason)
    if asks:
        merged.ask_reason = "\n\n".join(asks)
    if stop_reasons:
        merged.stop_reason = "\n\n".join(reason for reason in stop_reasons if reason)
    return merged
