"""Merging definitions from several sources: a later definition with the same key replaces the
earlier one entirely, and keeps the earlier one's place (order of first appearance). One exception:
an agent that sets no `permissions` or `sandbox` keeps the earlier one's, so a project's agent (or
a markdown agent) of the same name never loosens what the user set for it without saying so."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from openvaala_lsp.definitions import AgentDefinition, Definitions
from openvaala_lsp.protocol.converter import wire_name

# per list of `Definitions`, what makes two entries "the same"; everything else is keyed by name
_KEYS: dict[str, Callable[[Any], str]] = {
    "models": lambda m: f"{m.ref.provider}/{m.ref.name}",
    "executors": lambda e: str(e.id),
}


def key_of(list_key: str, entry: Any) -> str:
    return _KEYS.get(list_key, lambda e: str(e.name))(entry)


def merge_definitions(layers: Iterable[Definitions]) -> Definitions:
    """`layers` from lowest to highest precedence."""
    layers = list(layers)
    merged = Definitions()
    for field in attrs.fields(Definitions):
        by_key: dict[str, Any] = {}
        for layer in layers:
            for entry in getattr(layer, field.name):
                key = key_of(wire_name(field.name), entry)
                earlier = by_key.get(key)
                if field.name == "agents" and earlier is not None:
                    entry = _keep_guards(earlier, entry)
                by_key[key] = entry
        setattr(merged, field.name, list(by_key.values()))
    return merged


def _keep_guards(earlier: AgentDefinition, later: AgentDefinition) -> AgentDefinition:
    return attrs.evolve(
        later,
        permissions=later.permissions if later.permissions is not None else earlier.permissions,
        sandbox=later.sandbox if later.sandbox is not None else earlier.sandbox,
    )


def raw_key(list_key: str, entry: Any) -> str | None:
    """`key_of` for a wire-shaped dict as read from TOML (a `ref` may still be a shorthand)."""
    if not isinstance(entry, dict):
        return None
    if list_key == "models":
        ref = entry.get("ref")
        if isinstance(ref, dict):
            return f"{ref.get('provider')}/{ref.get('name')}"
        return ref if isinstance(ref, str) else None
    value = entry.get("id" if list_key == "executors" else "name")
    return value if isinstance(value, str) else None


def merge_raw(list_key: str, base: list[Any], over: list[Any]) -> list[Any]:
    by_key: dict[Any, Any] = {}
    for index, entry in enumerate([*base, *over]):
        by_key[raw_key(list_key, entry) or ("unkeyed", index)] = entry  # an unkeyed entry is kept as is
    return list(by_key.values())
