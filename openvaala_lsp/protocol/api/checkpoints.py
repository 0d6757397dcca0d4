"""Requests about what turns changed in the workspace: a turn's diff, reverting turns (0.4), and
where a fork's files go."""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.model import ConversationId, FieldError, FileChange, TurnId, check_path


def _absolute(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    check_path(instance, attribute, value)
    if not value.startswith("/"):
        raise FieldError(attribute.name, f"expected an absolute path, got {value[:200]!r}")


@attrs.define(kw_only=True)
class GetTurnDiffParams:
    conversation_id: ConversationId
    turn_id: TurnId


@attrs.define(kw_only=True)
class GetTurnDiffResult:
    """One `FileChange` per path, from the checkpoint before the turn to the one after it (to now
    while it runs); `complete` is false when a checkpoint left files out (listed in `skipped`)."""

    turn_id: TurnId
    files: list[FileChange]
    complete: bool


@attrs.define(kw_only=True)
class RevertTurnParams:
    """`files`: the workspace goes back to its state before `turnId` (and every later turn);
    `history`: those turns leave the model's context; `force`: files changed since are overwritten
    (else `conflict`)."""

    conversation_id: ConversationId
    turn_id: TurnId
    files: bool = True
    history: bool = False
    force: bool = False


@attrs.define(kw_only=True)
class RevertTurnResult:
    """What the revert changed on disk, the turns it reverted, and the revert's own turn
    (`revertedBy`): reverting that turn redoes what this one undid."""

    files: list[FileChange]
    reverted_turn_ids: list[TurnId]
    reverted_by: TurnId | None = None


@attrs.define(kw_only=True)
class RestoreFiles:
    """Where `forkConversation` checks the fork's files out: an absolute directory, empty or new."""

    directory: str = attrs.field(validator=_absolute)
