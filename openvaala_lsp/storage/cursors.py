"""Opaque keyset cursors for the record lists: `kind|micros|id`, urlsafe base64 without padding.

The kind letter keeps a conversations cursor from being replayed against the turns list.
"""

from __future__ import annotations

import base64
import datetime as dt

from openvaala_lsp.storage.codec import as_utc
from openvaala_lsp.storage.errors import InvalidCursor

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)

CONVERSATIONS = "c"
SESSIONS = "s"
TURNS = "t"


def encode(kind: str, at: dt.datetime, key: str) -> str:
    micros = (as_utc(at) - _EPOCH) // _MICRO
    return base64.urlsafe_b64encode(f"{kind}|{micros}|{key}".encode()).decode().rstrip("=")


def decode(kind: str, cursor: str) -> tuple[dt.datetime, str]:
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
        found, micros, key = raw.split("|", 2)
        if found != kind or not key or not micros.lstrip("-").isdigit():
            raise ValueError(raw)
        return _EPOCH + int(micros) * _MICRO, key
    except (ValueError, OverflowError):  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise InvalidCursor("cursor: malformed") from None
