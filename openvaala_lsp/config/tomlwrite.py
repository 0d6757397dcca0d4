"""A small TOML emitter for the shapes of a definitions document: top-level arrays of tables whose
values are strings, numbers, booleans, dates, arrays and inline tables (a `ref`, an `env`)."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def dumps(doc: Mapping[str, Any], *, header: str = "") -> str:
    """Plain keys first (TOML wants them before any table), then `[[array]]` tables."""
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    tables = {k: v for k, v in doc.items() if _is_table_array(v)}
    out += [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if k not in tables and v is not None]
    for key, entries in tables.items():
        for entry in entries:
            out += ["", f"[[{_key(key)}]]"]
            out += [f"{_key(k)} = {_value(v, multiline=True)}" for k, v in entry.items() if v is not None]
    return "\n".join(out).lstrip("\n") + "\n"


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _value(value: Any, *, multiline: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _multiline_string(value) if multiline and "\n" in value else _string(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None)
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list | tuple):
        if any(v is None for v in value):
            raise ValueError("TOML has no null: a list cannot hold None")
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _escape(char: str, *, keep_newline: bool) -> str:
    if keep_newline and char == "\n":
        return char
    if char in _ESCAPES:
        return _ESCAPES[char]
    return f"\\u{ord(char):04x}" if ord(char) < 0x20 or ord(char) == 0x7F else char


def _string(text: str) -> str:
    return '"' + "".join(_escape(c, keep_newline=False) for c in text) + '"'


def _multiline_string(text: str) -> str:
    # instructions stay readable; escaping every quote means no `"""` can end the string early
    return '"""\n' + "".join(_escape(c, keep_newline=True) for c in text) + '"""'
