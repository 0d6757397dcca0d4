"""The one cattrs converter of the protocol.

Wire rules: attribute names become lowerCamelCase (`from_` becomes `from`); fields whose value is
`None` are omitted, every other field is always present; enums travel as their values; times as
RFC 3339 UTC strings. Structuring is strict about types (no `"7"` to int, no string into a list)
and reports errors with wire field paths such as `$.content[0].type`. Unknown keys are ignored so
that newer clients keep working with this server.
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory
from cattrs.errors import AttributeValidationNote, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from openvaala_lsp.protocol.errors import FieldError

T = TypeVar("T")


def wire_name(name: str) -> str:
    """`conversation_id` -> `conversationId`; a trailing underscore (a Python keyword) is dropped."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _is_ours(cls: type) -> bool:
    return attrs.has(cls) and cls.__module__.startswith("openvaala_lsp")


def _strict(kind: type) -> Any:
    def structure(value: Any, _: type) -> Any:
        # bool is an int subclass in Python but not on the wire
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"expected {_JSON_NAMES[kind]}, got {_json_type(value)}")
        return value

    return structure


_JSON_NAMES = {str: "string", int: "integer", bool: "boolean", float: "number"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected number, got {_json_type(value)}")
    return float(value)


def _structure_datetime(value: Any, _: type) -> dt.datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected RFC 3339 string, got {_json_type(value)}")
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _unstructure_datetime(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"expected one of {allowed}, got {value!r}") from None


def _checked(kind: type, inner: Any) -> Any:
    """Refuses a wrong JSON container before cattrs would iterate it (a string into a list)."""

    def structure(value: Any, target: Any) -> Any:
        if not isinstance(value, kind):
            raise TypeError(f"expected {'array' if kind is list else 'object'}, got {_json_type(value)}")
        return inner(value, target)

    return structure


# A field with metadata {"json": True} holds JSON values already (query rows): sent as they are, unwalked.
JSON_ALREADY = "json"


def _as_is(value: Any) -> Any:
    return value


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True)
    for kind in (str, int, bool):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook_factory(is_sequence, lambda t: _checked(list, list_structure_factory(t, conv)))
    conv.register_structure_hook_factory(is_mapping, lambda t: _checked(dict, mapping_structure_factory(t, conv)))
    conv.register_structure_hook(dt.datetime, _structure_datetime)
    conv.register_unstructure_hook(dt.datetime, _unstructure_datetime)
    # StrEnum precedes str in a str-enum's MRO, so this wins over the strict str hook
    for base in (enum.Enum, enum.StrEnum):
        conv.register_structure_hook(base, _structure_enum)
    conv.register_unstructure_hook_func(lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda e: e.value)

    def unstructure_factory(cls: type) -> Any:
        overrides = {
            f.name: override(
                rename=wire_name(f.name),
                omit_if_default=f.default is None,
                unstruct_hook=_as_is if f.metadata.get(JSON_ALREADY) else None,
            )
            for f in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **overrides)  # type: ignore[arg-type]

    def structure_factory(cls: type) -> Any:
        overrides = {f.name: override(rename=wire_name(f.name)) for f in attrs.fields(cls)}
        fn: Any = make_dict_structure_fn(cls, conv, **overrides)  # type: ignore[arg-type]

        def structure(value: Any, target: type) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"expected object, got {_json_type(value)}")
            return fn(value, target)

        return structure

    conv.register_unstructure_hook_factory(_is_ours, unstructure_factory)
    conv.register_structure_hook_factory(_is_ours, structure_factory)
    return conv


CONVERTER = make_converter()


def structure(value: Any, cls: type[T]) -> T:
    """Structures wire JSON into `cls`; raises `ParamsError` naming every bad field."""
    try:
        return CONVERTER.structure(value, cls)
    except Exception as exc:  # cattrs raises ClassValidationError, TypeError, ValueError, ...
        raise ParamsError(describe_error(exc)) from None


def unstructure(value: Any) -> Any:
    return CONVERTER.unstructure(value)


class ParamsError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def describe_error(exc: BaseException, path: str = "$") -> list[str]:
    """Every problem in a (possibly nested) cattrs error as `<problem> @ $.wire.path`."""
    if isinstance(exc, FieldError):
        return [f"{exc} @ {path}.{wire_name(exc.field)}"]
    if isinstance(exc, BaseExceptionGroup):
        lines: list[str] = []
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", ()):
                if isinstance(note, AttributeValidationNote):
                    sub_path = f"{path}.{wire_name(note.name)}"
                elif isinstance(note, IterableValidationNote):
                    sub_path = f"{path}[{note.index!r}]"
            lines.extend(describe_error(sub, sub_path))
        return lines
    if isinstance(exc, KeyError):
        return [f"required field missing @ {path}"]
    message = (
        str(exc) if isinstance(exc, (TypeError, ValueError)) and str(exc) else f"invalid value ({type(exc).__name__})"
    )
    return [f"{message} @ {path}"]
