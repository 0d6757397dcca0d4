"""JSON-RPC error codes of PROTOCOL.md section 5, keyed by error kind."""

from __future__ import annotations

from openvaala_lsp.protocol import errors
from openvaala_lsp.wire import framing

CODES: dict[str, int] = {
    errors.ConversationNotFound.kind: -32010,
    errors.ConversationNotOpen.kind: -32011,
    errors.ConversationReconfigured.kind: -32012,
    errors.NoModelConfigured.kind: -32013,
    errors.RuntimeStopped.kind: -32014,
    errors.SessionNotFound.kind: -32015,
    errors.SubscriberTooSlow.kind: -32016,
    errors.NotFound.kind: -32017,
    errors.InvalidState.kind: -32018,
    errors.WorkspaceDenied.kind: -32019,
    errors.Overloaded.kind: -32021,
    errors.Conflict.kind: -32022,
    errors.InvalidParams.kind: -32602,
    **dict(
        (
            framing.PARSE_ERROR,
            framing.INVALID_REQUEST,
            framing.METHOD_NOT_FOUND,
            framing.INTERNAL,
            framing.REQUEST_CANCELLED,
            framing.MESSAGE_TOO_LARGE,
        )
    ),
    "serverNotInitialized": -32002,
}
KINDS: dict[int, str] = {code: kind for kind, code in CODES.items()}

METHOD_NOT_FOUND = CODES["methodNotFound"]
INVALID_PARAMS = CODES["invalidParams"]
INTERNAL_ERROR = CODES["internal"]
SERVER_NOT_INITIALIZED = CODES["serverNotInitialized"]
