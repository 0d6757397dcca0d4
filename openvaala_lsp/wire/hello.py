"""What travels between a front (or `openvaala sql`) and the host: the hello and the version policy
(then LSP frames, see `openvaala_lsp.wire.framing`).

The connection starts with one JSON line each way, then carries the editor's LSP frames unchanged:

    front -> host  {"openvaala": "hello", "protocol": 1, "version": "0.2.0", "pid": 123, "cwd": "/p",
                    "env": {...}}
    host -> front  {"ok": true, "protocol": 1, "version": "0.2.0", "pid": 456}
                or {"ok": false, "reason": "olderFront" | "draining" | "badHello", "message": "...", ...}

Those keys stay stable across versions so that any two versions can tell each other apart.
"""

from __future__ import annotations

import json
import os
from typing import Any

from openvaala_lsp import __version__

HELLO_PROTOCOL = 1
MAX_HELLO_BYTES = 1 << 22  # the editor's whole environment travels in the hello
VERSION_OVERRIDE = "OPENVAALA_VERSION_OVERRIDE"  # tests only: pretend to be another version

OLDER_FRONT = "olderFront"
DRAINING = "draining"
BAD_HELLO = "badHello"


def current_version() -> str:
    return os.environ.get(VERSION_OVERRIDE) or __version__


def front_hello() -> dict[str, Any]:
    return {
        "openvaala": "hello",
        "protocol": HELLO_PROTOCOL,
        "version": current_version(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def version_key(protocol: int, version: str) -> tuple[int, tuple[int, ...], bool, str]:
    """Orders (protocol, version): the release numbers, then a final release above its pre-releases
    ("0.2.0" > "0.2.0rc1"), then the full string, so two different versions are never equal."""
    numbers: list[int] = []
    final = True
    for part in version.split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if digits:
            numbers.append(int(digits))
        if digits != part:
            final = False
            break
    return protocol, tuple(numbers), final, version


def compare(front: tuple[int, str], host: tuple[int, str]) -> int:
    """-1 when the front is older than the host, 0 when they match, 1 when the front is newer."""
    a, b = version_key(*front), version_key(*host)
    return (a > b) - (a < b)
