"""Checking tool arguments against the tool's own JSON Schema.

Only the subset the local tools use is understood: a top-level object with `properties`,
`required` and `additionalProperties: false`, and per property `type` (string, integer, number,
boolean), `enum`, `minimum`, `maximum`, `minLength` and `default`. Models get arguments wrong often,
so every failure names the field in words a model can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ArgumentError(ValueError):
    """Arguments that do not fit the schema; the message names the offending field."""


_TYPE_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _check_value(name: str, value: Any, spec: Mapping[str, Any]) -> Any:
    expected = spec.get("type")
    if expected == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"argument '{name}' must be a string, got {_json_type(value)}")
        if len(value) < spec.get("minLength", 0):
            raise ArgumentError(f"argument '{name}' must not be empty")
    elif expected == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(f"argument '{name}' must be a boolean, got {_json_type(value)}")
    elif expected in ("integer", "number"):
        # bool is an int subclass in Python but never a JSON number.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ArgumentError(f"argument '{name}' must be an {expected}, got {_json_type(value)}")
        if expected == "integer":
            if isinstance(value, float):
                # JSON has one number type; 5000.0 is an integer in JSON Schema's sense.
                if not value.is_integer():
                    raise ArgumentError(f"argument '{name}' must be an integer, got {value}")
                value = int(value)
        if "minimum" in spec and value < spec["minimum"]:
            raise ArgumentError(f"argument '{name}' must be at least {spec['minimum']}, got {value}")
        if "maximum" in spec and value > spec["maximum"]:
            raise ArgumentError(f"argument '{name}' must be at most {spec['maximum']}, got {value}")
    if "enum" in spec and value not in spec["enum"]:
        choices = ", ".join(repr(choice) for choice in spec["enum"])
        raise ArgumentError(f"argument '{name}' must be one of {choices}, got {value!r}")
    return value


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in, or ArgumentError naming the first bad field."""
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"arguments must be a JSON object, got {_json_type(arguments)}")
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments or arguments[name] is None:
            raise ArgumentError(f"missing required argument '{name}'")
    if schema.get("additionalProperties") is False:
        unknown = sorted(str(key) for key in arguments if key not in properties)
        if unknown:
            known = ", ".join(properties)
            raise ArgumentError(f"unknown argument '{unknown[0]}' (this tool takes: {known})")
    result: dict[str, Any] = {}
    for name, spec in properties.items():
        value = arguments.get(name)
        if value is None:
            # Models send explicit nulls for optional fields; treat them as absent.
            if "default" in spec:
                result[name] = spec["default"]
            continue
        result[name] = _check_value(name, value, spec)
    return result
