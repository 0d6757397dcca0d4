"""Compacting a session's context, so a long session goes on instead of failing when its window fills.

A compaction writes one `compaction` item; the log keeps every earlier item for people, and
`context.model_items` shows the model only what the item leaves. Two ways, cheapest first:

- **Pruning** (automatic compaction only): old tool outputs leave the context (their calls stay),
  when that alone brings the context well under the threshold. The newest outputs, a budget's worth,
  and the outputs of the last two user turns are kept; so are skill bodies.
- **Hand-off**: the session's model writes a structured hand-off (goal, instructions, decisions, files
  touched, errors, open tasks) from the context, and the most recent user messages are added verbatim
  within a budget, by the runtime rather than by the model. Everything before the item leaves.

preCompact hooks fire first and may block it. A compaction that fails (the call fails, the hand-off is
empty, the turn is interrupted) writes nothing: the history is untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import (
    Compaction,
    CompactionTrigger,
    Content,
    ContextUsage,
    ContextUsageSource,
    ErrorInfo,
    Item,
    ItemStatus,
    ItemType,
    ModelCallPurpose,
    SessionState,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.providers.base import Message, ModelRequest, ProviderError, ToolSpec
from openvaala_lsp.runtime import context, model_calls
from openvaala_lsp.runtime.skills import SKILL_TOOL
from openvaala_lsp.telemetry.base import CompactionSpan

COMPACTION_FAILED = "compactionFailed"
HOOK_BLOCKED = "hookBlocked"
THRESHOLD_SHARE = 0.85  # of the window, when the model sets no compactThreshold
PRUNE_TARGET_SHARE = 0.75  # of the threshold: pruning alone must bring the context under this
PROTECTED_TOOL_SHARE = 0.25  # of the window: the newest tool outputs, kept when pruning
PROTECTED_USER_TURNS = 2
RECENT_USER_SHARE = 0.15  # of the window, at most RECENT_USER_MAX tokens: user messages kept verbatim
RECENT_USER_MAX = 20_000
SUMMARY_REQUEST_SHARE = 0.8  # of the window: the hand-off request is cut from its oldest items to fit
HANDOFF_MAX_TOKENS = 4096

HANDOFF_INSTRUCTIONS = """\
You are compacting the context of a coding agent's session: the earlier part of the conversation is \
about to leave the context, and another model will carry on from what you write now. Write a hand-off \
in these sections, with exact file paths, commands, identifiers, error messages and numbers:

## Goal
What the user wants, in their terms.
## Instructions and constraints
Everything the user asked for or ruled out that still applies (quote the important ones).
## Decisions
What was decided, and why.
## Files touched
Each file read or changed, and what changed.
## Errors and fixes
What went wrong and how it was fixed, or that it is still open.
## Current state and next step
Where the work stands, the open tasks, and the very next step.

Write only the hand-off."""
HANDOFF_REQUEST = "Write the hand-off now."
SUMMARY_HEADER = (
    "This session's earlier context was compacted to save room; the log still holds every earlier item. "
    "The hand-off written then follows."
)
RECENT_HEADER = "The most recent user messages, verbatim:"


def threshold(model: ModelDefinition | None) -> int:
    """Context tokens past which a session compacts: the model's own, else 85 % of its window."""
    if model is None:
        return 0
    return model.compact_threshold or int(model.context_window * THRESHOLD_SHARE)


@attrs.frozen
class Outcome:
    compacted: bool
    error: ErrorInfo | None = None  # why it did not happen (a blocking hook, a failed call)


async def compact(owner: Any, active: Any, trigger: CompactionTrigger) -> Outcome:
    """Compacts `owner`'s session (a `turns.TurnOwner`) within `active` (its `turns.ActiveTurn`)."""
    host, turn, model = owner.host, active.turn, active.model
    window = model.context_window
    history = list(await owner.history())
    tools = context.tool_specs(host.tools(active.definitions, owner.session))
    instructions = owner.instructions(active.definitions)
    before_tokens = context.estimate_request(instructions, tools, history)
    before = owner.usage.next_request(history, window)
    if before.source is ContextUsageSource.UNKNOWN:
        before = ContextUsage(source=ContextUsageSource.ESTIMATED, tokens=before_tokens, window=window)

    hook_trigger = "manual" if trigger is CompactionTrigger.MANUAL else "auto"
    gate = await active.hooks.fire("preCompact", {"trigger": hook_trigger, "custom_instructions": ""}, hook_trigger)
    if gate.blocked:
        return Outcome(False, ErrorInfo(kind=HOOK_BLOCKED, message=gate.reason or "blocked by a preCompact hook"))

    owner.publish(events.CompactionStarted(turn_id=turn.id))
    owner.set_state(SessionState.COMPACTING)
    span: CompactionSpan = active.trace.compaction(trigger)
    try:
        view = context.model_items(history)
        prunable = _prunable(view, window)
        freed = sum(context.estimate_item(i) - context.estimate_text(context.PRUNED_TEXT) for i in prunable)
        enough = before.tokens - freed <= threshold(model) * PRUNE_TARGET_SHARE
        if trigger is CompactionTrigger.AUTO and prunable and enough:
            record = Compaction(trigger=trigger, summarized=False, pruned_item_ids=[i.id for i in prunable])
            text = ""
        else:
            handoff = await _handoff(owner, active, view, prunable, span)
            record = Compaction(trigger=trigger, summarized=True)
            text = "\n\n".join(part for part in (SUMMARY_HEADER, handoff, _recent_user_messages(view, window)) if part)
        item = Item(
            id=new_id("item"),
            conversation_id=turn.conversation_id,
            session_id=turn.session_id,
            turn_id=turn.id,
            type=ItemType.COMPACTION,
            status=ItemStatus.COMPLETED,
            created_at=utcnow(),
            content=[Content(type="text", text=text)],
            compaction=record,
        )
        record.tokens_before = before_tokens
        record.tokens_after = context.estimate_request(instructions, tools, [*history, item])
        await active.items.append(item)
        # before the state goes back to running: the sessionUpdated that says so carries the new size
        owner.usage.rebase(record.tokens_after, await owner.history(), window)
    except asyncio.CancelledError:
        span.end("interrupted")
        raise
    except Exception as exc:
        kind = exc.kind if isinstance(exc, ProviderError) else COMPACTION_FAILED
        span.end(kind)
        error = ErrorInfo(kind=kind, message=f"compaction failed, the history is unchanged: {_message(exc)}")
        owner.publish(events.ErrorEvent(error=error))
        return Outcome(False, error)
    finally:
        owner.set_state(SessionState.RUNNING)
    span.end()
    owner.publish(events.ContextUsageUpdated(context=owner.usage.context))
    after = ContextUsage(source=ContextUsageSource.ESTIMATED, tokens=record.tokens_after, window=window)
    owner.publish(events.CompactionCompleted(turn_id=turn.id, before=before, after=after))
    return Outcome(True)


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"


def _prunable(view: Sequence[Item], window: int) -> list[Item]:
    """Tool results whose output may leave the context: not in the last user turns, not among the
    newest outputs that fit the protected budget, not a skill's instructions."""
    user_turns = 0
    kept, budget = 0, int(window * PROTECTED_TOOL_SHARE)
    candidates: list[Item] = []
    for item in reversed(view):
        if item.type == ItemType.USER_MESSAGE:
            user_turns += 1
            continue
        if item.type != ItemType.TOOL_RESULT or item.tool_result is None or item.tool_result.name == SKILL_TOOL:
            continue
        if user_turns < PROTECTED_USER_TURNS or context.item_text(item) == context.PRUNED_TEXT:
            continue
        size = context.estimate_item(item)
        if kept + size <= budget:
            kept += size
            continue
        budget = kept  # the budget is spent: every older output may go
        candidates.append(item)
    return candidates[::-1]  # in log order


async def _handoff(
    owner: Any, active: Any, view: Sequence[Item], prunable: Sequence[Item], span: CompactionSpan
) -> str:
    """The model's hand-off for `view`; its call is accounted to the turn (purpose `compaction`)."""
    model: ModelDefinition = active.model
    cleared = {i.id for i in prunable}
    items = [
        attrs.evolve(i, content=[Content(type="text", text=context.PRUNED_TEXT)]) if i.id in cleared else i
        for i in view
    ]
    budget = int(model.context_window * SUMMARY_REQUEST_SHARE) - (model.max_output_tokens or HANDOFF_MAX_TOKENS)
    while len(items) > 1 and _estimate(items) > budget:
        items = items[1:]  # the oldest leave first: the recent context matters most to carry on
    messages = [*context.to_messages(items), Message(role="user", content=[Content(type="text", text=HANDOFF_REQUEST)])]
    request = ModelRequest(
        model=model.ref.name,
        instructions=HANDOFF_INSTRUCTIONS,
        messages=messages,
        tools=list[ToolSpec](),
        max_output_tokens=min(model.max_output_tokens or HANDOFF_MAX_TOKENS, HANDOFF_MAX_TOKENS),
        reasoning_effort=None,
    )
    provider = await owner.host.provider(model)
    record = model_calls.new_record(active.turn, model, owner.host.workspace_root(), ModelCallPurpose.COMPACTION)
    call = model_calls.TextCall(record)
    call_span = span.model_call(model, request)
    try:
        await call.run(provider, request)
    finally:
        produced = [attrs.evolve(view[-1], content=[Content(type="text", text=call.text)])] if view else []
        owner.usage.record(record, call.usage, items, produced, 0, in_context=False)
        call_span.finish(record, call.finish_reason, produced)
        await owner.host.storage.append_model_call(record)
        active.turn.usage = active.turn.usage + record.usage
        owner.publish(events.UsageUpdated(usage=owner.usage.usage))
    handoff = call.text.strip()
    if not handoff:
        raise ValueError("the model wrote an empty hand-off")
    return handoff


def _estimate(items: Sequence[Item]) -> int:
    return sum(context.estimate_item(item) for item in items)


def _recent_user_messages(view: Sequence[Item], window: int) -> str:
    """The newest user messages, verbatim, as many as fit the budget (the newest one cut to fit)."""
    budget = min(RECENT_USER_MAX, int(window * RECENT_USER_SHARE))
    kept: list[str] = []
    for item in reversed(view):
        if item.type != ItemType.USER_MESSAGE or item.status == ItemStatus.WITHDRAWN:
            continue
        text = context.item_text(item)
        cost = context.estimate_text(text)
        if cost > budget:
            if not kept:
                kept.append(text[: budget * context.BYTES_PER_TOKEN])
            break
        kept.append(text)
        budget -= cost
    if not kept:
        return ""
    return "\n\n".join([RECENT_HEADER, *(f"> {text}".replace("\n", "\n> ") for text in reversed(kept))])
