"""DuckDB result values as JSON values, chosen by the column's DuckDB type.

The rules (schemas/README.md documents them for clients):
- integers of any width (HUGEINT, UBIGINT, BIGNUM, ...) are numbers; DECIMAL is a string, exactly
  as stored; FLOAT/DOUBLE are numbers, except NaN and ±infinity, which JSON cannot carry: the
  strings "NaN", "Infinity", "-Infinity";
- TIMESTAMP* are RFC 3339 UTC strings with microseconds and `Z` (a TIMESTAMP without time zone is
  taken as UTC); DATE is `YYYY-MM-DD`; TIME is `HH:MM:SS[.ffffff][+HH:MM]`;
- INTERVAL is an ISO 8601 duration (`P1DT2H3M4.5S`); DuckDB hands an interval's months to Python as
  30 days each, so `INTERVAL 1 MONTH` reads `P30D`;
- UUID and BIT are strings, BLOB (and GEOMETRY, which DuckDB hands over as WKB) is base64;
- JSON is the parsed JSON value; LIST and ARRAY are arrays; STRUCT is an object; MAP is an object
  when its keys are VARCHAR, else an array of `{"key", "value"}` objects; UNION is its member's value.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

from duckdb.sqltypes import DuckDBPyType

Convert = Callable[[Any], Any]

_TIMESTAMPS = {
    "timestamp",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
    "timestamp with time zone",
}
_TEXT_KEYS = {"varchar", "enum"}


def type_name(column_type: DuckDBPyType) -> str:
    """DuckDB's own name of the type, with the NULL type unquoted (DuckDB quotes the keyword)."""
    return str(column_type).replace('"NULL"', "NULL")


def converter(column_type: DuckDBPyType) -> Convert:
    """The function turning one value of `column_type` (never None) into a JSON value."""
    kind = column_type.id
    if kind in _TIMESTAMPS:
        return _timestamp
    if kind in ("float", "double"):
        return _float
    if kind == "varchar" and type_name(column_type) == "JSON":
        return json.loads
    if kind == "list" or kind == "array":
        item = _nullable(converter(_child(column_type, "child")))
        return lambda value: [item(v) for v in value]
    if kind == "struct":
        fields = {name: _nullable(converter(_child(column_type, name))) for name, _ in column_type.children}
        return lambda value: {name: fields[name](v) for name, v in value.items()}
    if kind == "map":
        key_type, value_type = _child(column_type, "key"), _child(column_type, "value")
        key, item = converter(key_type), _nullable(converter(value_type))
        if key_type.id in _TEXT_KEYS:
            return lambda value: {k: item(v) for k, v in value.items()}
        return lambda value: [{"key": key(k), "value": item(v)} for k, v in value.items()]
    return _SIMPLE.get(kind, plain)


def plain(value: Any) -> Any:
    """A value by its Python type: for UNION members and any type without a rule of its own."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    for kind, convert in _BY_PYTHON_TYPE:
        if isinstance(value, kind):
            return convert(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def _child(column_type: DuckDBPyType, name: str) -> DuckDBPyType:
    child = dict(column_type.children)[name]
    assert isinstance(child, DuckDBPyType), f"{column_type} has no type child {name!r}"
    return child


def _nullable(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _timestamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds") + "Z"


def _float(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _decimal(value: decimal.Decimal) -> str:
    return format(value, "f")  # never exponent notation: Decimal("0E-6") reads "0.000000"


def _duration(value: dt.timedelta) -> str:
    """ISO 8601: `P[nD][T[nH][nM][n[.f]S]]`, with one leading minus for a negative interval."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    time = ""
    if hours:
        time += f"{hours}H"
    if minutes:
        time += f"{minutes}M"
    if seconds or value.microseconds:
        time += f"{seconds}.{value.microseconds:06d}".rstrip("0").rstrip(".") + "S"
    days = f"{value.days}D" if value.days else ""
    if not days and not time:
        return "PT0S"
    return f"{sign}P{days}" + (f"T{time}" if time else "")


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


_SIMPLE: dict[str, Convert] = {
    "decimal": _decimal,
    "date": lambda value: value.isoformat(),
    "time": lambda value: value.isoformat(),
    "time_ns": lambda value: value.isoformat(),
    "time with time zone": lambda value: value.isoformat(),
    "interval": _duration,
    "uuid": str,
    "blob": _base64,
    "geometry": _base64,
    "bignum": int,  # DuckDB hands BIGNUM over as a decimal string
    "union": plain,
}

# Order matters: datetime is a date, bool and the ints were handled before.
_BY_PYTHON_TYPE: tuple[tuple[type, Convert], ...] = (
    (float, _float),
    (decimal.Decimal, _decimal),
    (dt.datetime, _timestamp),
    (dt.date, lambda value: value.isoformat()),
    (dt.time, lambda value: value.isoformat()),
    (dt.timedelta, _duration),
    (uuid.UUID, str),
    (bytes, _base64),
)
