"""Typed errors of the runtime API (the seed's sentinel errors plus a few more).

The protocol layer maps `kind` to a JSON-RPC code; the runtime only raises these.
"""

from __future__ import annotations

from typing import Any

from openvaala_lsp.model import FieldError, FileChange

__all__ = ["FieldError"]  # defined with the domain types that validate with it


class RuntimeApiError(Exception):
    kind = "internal"
    default_message = "internal error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.default_message)
        self.message = message or self.default_message

    def data(self) -> dict[str, Any]:
        """What the error's `data` carries besides its kind (attrs values: the wire unstructures them)."""
        return {}


class ConversationNotFound(RuntimeApiError):
    kind = "conversationNotFound"
    default_message = "conversation not found"


class ConversationNotOpen(RuntimeApiError):
    kind = "conversationNotOpen"
    default_message = "conversation is not open"


class ConversationReconfigured(RuntimeApiError):
    kind = "conversationReconfigured"
    default_message = "conversation reconfigured"


class NoModelConfigured(RuntimeApiError):
    kind = "noModelConfigured"
    default_message = "no model is configured; run openvaala to set up a model provider"


class RuntimeStopped(RuntimeApiError):
    kind = "runtimeStopped"
    default_message = "runtime has stopped"


class SessionNotFound(RuntimeApiError):
    kind = "sessionNotFound"
    default_message = "session not found"


class SubscriberTooSlow(RuntimeApiError):
    kind = "subscriberTooSlow"
    default_message = "subscriber is too slow"


class NotFound(RuntimeApiError):
    kind = "notFound"
    default_message = "not found"


class InvalidState(RuntimeApiError):
    kind = "invalidState"
    default_message = "invalid state"


class WorkspaceDenied(RuntimeApiError):
    kind = "workspaceDenied"
    default_message = "directory is outside the workspace folders"


class Overloaded(RuntimeApiError):
    kind = "overloaded"
    default_message = "too many requests in flight on this connection; retry later"


class Conflict(RuntimeApiError):
    """`revertTurn` would overwrite changes made since the turns it reverts: `data.files` lists each
    file with its diff from what the agent left to what it holds now."""

    kind = "conflict"
    default_message = "files changed since would be overwritten"

    def __init__(self, message: str | None = None, files: list[FileChange] | None = None) -> None:
        super().__init__(message)
        self.files = files or []

    def data(self) -> dict[str, Any]:
        return {"files": self.files}


class InvalidParams(RuntimeApiError):
    """Semantically invalid input the type system cannot catch (an empty title, an oversized image).
    The message ends with the field path, e.g. `image larger than 5 MiB @ $.content[0].data`."""

    kind = "invalidParams"
    default_message = "invalid params"


ALL_ERRORS: tuple[type[RuntimeApiError], ...] = (
    ConversationNotFound,
    ConversationNotOpen,
    ConversationReconfigured,
    NoModelConfigured,
    RuntimeStopped,
    SessionNotFound,
    SubscriberTooSlow,
    NotFound,
    InvalidState,
    WorkspaceDenied,
    Overloaded,
    Conflict,
    InvalidParams,
)
