"""`endings.reason_for`: each status, error kind and cause maps to its `Turn.reason` (the endings the
runtime tests cannot bring about at will: a bug, a failed compaction), and a running turn has none."""

from __future__ import annotations

import datetime as dt

import pytest

from openvaala_lsp.model import ErrorInfo, Turn, TurnReason, TurnStatus
from openvaala_lsp.runtime.endings import reason_for


def ended(status: TurnStatus, kind: str | None = None) -> Turn:
    error = ErrorInfo(kind=kind, message="why") if kind is not None else None
    return Turn(
        id="turn_1", conversation_id="c", session_id="s", started_at=dt.datetime.now(dt.UTC), status=status, error=error
    )


@pytest.mark.parametrize(
    ("turn", "causes", "reason"),
    [
        (ended(TurnStatus.COMPLETED), {}, TurnReason.COMPLETED),
        (ended(TurnStatus.COMPLETED), {"finish_reason": "stop"}, TurnReason.COMPLETED),
        (ended(TurnStatus.COMPLETED), {"finish_reason": "length"}, TurnReason.MAX_TOKENS),
        # what ended the loop wins over how the model's last answer stopped
        (
            ended(TurnStatus.COMPLETED),
            {"finish_reason": "length", "ended_by": TurnReason.LIMIT_REACHED},
            TurnReason.LIMIT_REACHED,
        ),
        (ended(TurnStatus.INTERRUPTED), {}, TurnReason.USER_INTERRUPT),
        (ended(TurnStatus.INTERRUPTED), {"runtime_stopping": True}, TurnReason.RUNTIME_STOPPED),
        (
            ended(TurnStatus.INTERRUPTED),
            {"stopped_by": TurnReason.USER_INTERRUPT, "runtime_stopping": True},
            TurnReason.USER_INTERRUPT,
        ),
        (ended(TurnStatus.FAILED, "rateLimited"), {}, TurnReason.MODEL_ERROR),
        (ended(TurnStatus.FAILED, "compactionFailed"), {}, TurnReason.MODEL_ERROR),
        (ended(TurnStatus.FAILED, "hookBlocked"), {}, TurnReason.CANCELLED_BY_HOOK),
        (ended(TurnStatus.FAILED, "internal"), {}, TurnReason.RUNTIME_STOPPED),
        (ended(TurnStatus.FAILED), {}, TurnReason.RUNTIME_STOPPED),  # failed with no error: the runtime's own
    ],
)
def test_each_ending_has_its_reason(turn: Turn, causes: dict[str, object], reason: TurnReason) -> None:
    found = reason_for(
        turn,
        stopped_by=causes.get("stopped_by"),  # type: ignore[arg-type]
        ended_by=causes.get("ended_by"),  # type: ignore[arg-type]
        finish_reason=causes.get("finish_reason"),  # type: ignore[arg-type]
        runtime_stopping=bool(causes.get("runtime_stopping")),
    )
    assert found is reason


def test_a_running_turn_has_no_reason() -> None:
    with pytest.raises(ValueError, match="turn_1 has not ended: status running"):
        reason_for(
            ended(TurnStatus.RUNNING), stopped_by=None, ended_by=None, finish_reason=None, runtime_stopping=False
        )
