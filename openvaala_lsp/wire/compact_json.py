"""Compact JSON bytes on the host's hot paths, by orjson: a model request's body (the conversation's
history is most of it: the json module took 0.68 ms for 100 KB where orjson takes 0.02, measured)
and every frame to an editor (notifications carry every delta of an answer: the json module's
encoder was 4% of a streaming host's time, py-spy, 16 turns of 2000 deltas).

What orjson refuses (a lone surrogate, an integer past 64 bits, a key that is not a string)
`framing.dumps` writes, or refuses with TypeError (an object of no JSON type). NaN and infinities,
which JSON lacks, go as null. The front keeps the stdlib `framing` alone (it imports no orjson).
"""

from __future__ import annotations

from typing import Any

import orjson

from openvaala_lsp.wire import framing


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        return framing.dumps(value)
