"""How a turn ended (`Turn.reason`), told from its status and error and from what stopped it.

Interrupted: by whom (`stopped_by`: the user's interrupt, or the runtime stopping). Failed: a hook
that blocked the prompt or the compaction is `cancelledByHook`, the runtime's own failure (a bug, a
broken store) `runtimeStopped`, anything else the model's (`modelError`, its kind in `error`: the
provider's error kind, or `compactionFailed`). Completed: how the loop ended it when not by the
model's answer (`ended_by`: a hook's `continue: false`, the stop hook's limit), else `maxTokens` when
the model's last answer stopped at its output limit."""

from __future__ import annotations

from openvaala_lsp.model import Turn, TurnReason, TurnStatus

HOOK_BLOCKED = "hookBlocked"
INTERNAL = "internal"
OUTPUT_LIMIT = "length"  # `providers.base.Completed.finish_reason` of an answer cut at max tokens


def reason_for(
    turn: Turn,
    *,
    stopped_by: TurnReason | None,
    ended_by: TurnReason | None,
    finish_reason: str | None,
    runtime_stopping: bool,
) -> TurnReason:
    if turn.status is TurnStatus.INTERRUPTED:
        if stopped_by is not None:
            return stopped_by
        return TurnReason.RUNTIME_STOPPED if runtime_stopping else TurnReason.USER_INTERRUPT
    if turn.status is TurnStatus.FAILED:
        kind = turn.error.kind if turn.error is not None else INTERNAL
        if kind == HOOK_BLOCKED:
            return TurnReason.CANCELLED_BY_HOOK
        return TurnReason.RUNTIME_STOPPED if kind == INTERNAL else TurnReason.MODEL_ERROR
    if turn.status is TurnStatus.COMPLETED:
        if ended_by is not None:
            return ended_by
        return TurnReason.MAX_TOKENS if finish_reason == OUTPUT_LIMIT else TurnReason.COMPLETED
    raise ValueError(f"turn {turn.id} has not ended: status {turn.status.value}")
