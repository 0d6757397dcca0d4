"""What every part of the runtime API shares, and what the runtime needs from it to start: the
limits and field checks, the empty result, and the approval and pending-input shapes that events
carry."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from openvaala_lsp.model import (
    Item,
    ItemId,
    SessionId,
    SessionInputMode,
    TurnId,
)
from openvaala_lsp.protocol.errors import FieldError

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
DEFAULT_QUERY_LIMIT = 10_000
MAX_QUERY_LIMIT = 100_000
# an analytic query over months of history takes seconds; a minute is its default, ten its most
DEFAULT_QUERY_TIMEOUT_MS = 60_000
MAX_QUERY_TIMEOUT_MS = 600_000


def _check_limit(instance: Any, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_LIMIT:
        raise FieldError(attribute.name, f"must be between 1 and {MAX_LIMIT}")


def _check_query_limit(instance: Any, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_QUERY_LIMIT:
        raise FieldError(attribute.name, f"must be between 1 and {MAX_QUERY_LIMIT}")


def _check_query_timeout(instance: Any, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and not 1 <= value <= MAX_QUERY_TIMEOUT_MS:
        raise FieldError(attribute.name, f"must be between 1 and {MAX_QUERY_TIMEOUT_MS}")


def _check_environment(instance: Any, attribute: attrs.Attribute[list[str] | None], value: list[str] | None) -> None:
    for entry in value or ():
        if "=" not in entry or entry.startswith("="):
            raise FieldError(attribute.name, f"entries are KEY=VALUE strings, got {entry[:200]!r}")
        if "\0" in entry:
            raise FieldError(attribute.name, "an environment entry cannot hold a NUL character")


@attrs.define(kw_only=True)
class EmptyResult:
    """The result of methods that return only an error in Go."""


@attrs.define(kw_only=True)
class ApprovalRequest:
    """What the user is asked to allow: the tool and its arguments, why it asks, and for the shell the
    command; the paths it names."""

    tool: str
    arguments: dict[str, Any]
    reason: str | None = None
    command: str | None = None
    paths: list[str] | None = None


@attrs.define(kw_only=True)
class PendingApproval:
    """A tool call waiting for `answerApproval`: its item, the session it belongs to, the request."""

    item_id: ItemId
    session_id: SessionId
    approval: ApprovalRequest


class ApprovalDecision(enum.StrEnum):
    ALLOW_ONCE = "allowOnce"
    ALLOW_ALWAYS = "allowAlways"
    DENY = "deny"


@attrs.define(kw_only=True)
class PendingInputInfo:
    item: Item
    mode: SessionInputMode
    turn_id: TurnId | None = None


@attrs.define(kw_only=True)
class StreamingItem:
    item_index: int
    item: Item


@attrs.define(kw_only=True)
class IsIdleParams:
    """`{}` (or absent)."""


@attrs.define(kw_only=True)
class IsIdleResult:
    idle: bool
