"""Checks a definitions document (wire-shaped, as parsed from TOML) and structures it.

The protocol converter does the typing, so a file is held to the same rules as `setDefinitions`.
On top, because a file is written by hand: unknown keys are errors (a typo must not vanish),
the values with a fixed set of choices are checked, and `"provider/name"` stands for a ModelRef.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import attrs

from openvaala_lsp.definitions import MODEL_APIS, Definitions
from openvaala_lsp.executors import ssh_target
from openvaala_lsp.protocol.converter import ParamsError, structure, wire_name
from openvaala_lsp.telemetry.settings import check_table

from .errors import split_problem

Problem = tuple[str, str]  # (wire path, message)

# values the runtime only understands from a fixed set; the attrs types keep them as plain strings
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("models", "api"): MODEL_APIS,
    ("mcpServers", "transport"): ("stdio", "http"),
    ("executors", "kind"): ("local", "ssh"),
}
# where a ModelRef may be written as "provider/name"
MODEL_REFS = (("models", "ref"), ("agents", "defaultModel"), ("agents", "titleModel"))


def list_keys() -> list[str]:
    return [wire_name(f.name) for f in attrs.fields(Definitions)]


def parse_model_ref(text: str) -> dict[str, str] | None:
    """`"openai/gpt-4o"` -> `{provider, name}`; the name may hold more slashes, the provider not."""
    provider, _, name = text.partition("/")
    if not provider.strip() or not name.strip() or provider != provider.strip() or name != name.strip():
        return None
    return {"provider": provider, "name": name}


def check_document(doc: dict[str, Any], *, user: bool = False) -> tuple[Definitions | None, list[Problem]]:
    """Normalizes `doc` in place and structures it; returns the definitions or, if anything is wrong,
    None and one problem per field (the first found: a bad shorthand, not also "expected object").
    The user's own file (`user`) may also hold `[telemetry]`, which is no definition (`telemetry/`)."""
    problems = _telemetry(doc, user)
    problems += _unknown_keys(doc, Definitions, "$", top=True)
    problems += _model_refs(doc)
    problems += _choices(doc)
    try:
        definitions = structure(doc, Definitions)
    except ParamsError as exc:
        problems += [split_problem(p) for p in exc.problems]
        definitions = None
    if definitions is not None:
        problems += _ssh_executors(definitions)
    first: dict[str, str] = {}
    for path, message in problems:
        first.setdefault(path, message)
    return (definitions if not first else None), list(first.items())


def _telemetry(doc: dict[str, Any], user: bool) -> list[Problem]:
    """Takes the `telemetry` table out of `doc`: checked in the user's file, refused in a project's,
    which must not decide where the user's traces go."""
    if "telemetry" not in doc:
        return []
    table = doc.pop("telemetry")
    if not user:
        return [("$.telemetry", "only the user config may set telemetry")]
    return check_table(table)


def _ssh_executors(definitions: Definitions) -> list[Problem]:
    """What an `ssh` executor lacks (a host, a user, a key or the agent, its roots)."""
    return [
        (f"$.executors[{i}].{field}", message)
        for i, executor in enumerate(definitions.executors)
        if executor.kind == "ssh"
        for field, message in ssh_target.problems(executor)
    ]


def _entries(doc: dict[str, Any], list_key: str) -> list[tuple[int, dict[str, Any]]]:
    value = doc.get(list_key)
    if not isinstance(value, list):
        return []
    return [(i, entry) for i, entry in enumerate(value) if isinstance(entry, dict)]


def _model_refs(doc: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for list_key, field in MODEL_REFS:
        for i, entry in _entries(doc, list_key):
            value = entry.get(field)
            if isinstance(value, str):
                ref = parse_model_ref(value)
                if ref is None:
                    problems.append((f"$.{list_key}[{i}].{field}", f'expected "provider/name", got {value!r}'))
                else:
                    entry[field] = ref
    return problems


def _choices(doc: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for (list_key, field), allowed in CHOICES.items():
        for i, entry in _entries(doc, list_key):
            value = entry.get(field)
            if isinstance(value, str) and value not in allowed:
                expected = ", ".join(repr(a) for a in allowed)
                problems.append((f"$.{list_key}[{i}].{field}", f"expected one of {expected}, got {value!r}"))
    return problems


def _unknown_keys(value: dict[str, Any], cls: type, path: str, *, top: bool = False) -> list[Problem]:
    hints = typing.get_type_hints(cls)
    fields = {wire_name(f.name): hints[f.name] for f in attrs.fields(cls)}
    problems: list[Problem] = []
    for key, item in value.items():
        if key not in fields:
            expected = ", ".join(sorted(fields))
            problems.append((f"{path}.{key}", f"unknown {'key' if top else 'field'}; expected one of {expected}"))
            continue
        inner, many = _element_type(fields[key])
        if inner is None:
            continue
        if many and isinstance(item, list):
            for i, element in enumerate(item):
                if isinstance(element, dict):
                    problems += _unknown_keys(element, inner, f"{path}.{key}[{i}]")
        elif not many and isinstance(item, dict):
            problems += _unknown_keys(item, inner, f"{path}.{key}")
    return problems


def _element_type(hint: Any) -> tuple[type | None, bool]:
    """The attrs class inside `X | None` or `list[X]`, and whether it is a list."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        hint = next((a for a in typing.get_args(hint) if a is not type(None)), None)
    many = typing.get_origin(hint) is list
    if many:
        hint = typing.get_args(hint)[0]
    return (hint if isinstance(hint, type) and attrs.has(hint) else None), many
