"""Checking hook definitions before any of them runs; problems name the wire path of the field."""

from __future__ import annotations

import re
from collections.abc import Sequence

from openvaala_lsp.definitions import HookDefinition
from openvaala_lsp.hooks.events import HOOK_EVENTS
from openvaala_lsp.hooks.matchers import compile_matcher


class HookDefinitionError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid hook definitions: " + "; ".join(problems))
        self.problems = problems


def _event_problem(event: str, path: str) -> str | None:
    if event in HOOK_EVENTS:
        return None
    # Users arrive with Claude Code's PascalCase names (`PreToolUse`); point them to ours.
    near = [known for known in HOOK_EVENTS if known.lower() == event.lower()]
    hint = f"did you mean '{near[0]}'?" if near else "known: " + ", ".join(HOOK_EVENTS)
    return f"unknown hook event '{event}' ({hint}) @ {path}"


def validate_hooks(hooks: Sequence[HookDefinition]) -> list[str]:
    """Every problem found, in definition order; empty when all hooks can run."""
    problems: list[str] = []
    for index, hook in enumerate(hooks):
        path = f"$.hooks[{index}]"
        if not hook.name.strip():
            problems.append(f"hook name is empty @ {path}.name")
        if (problem := _event_problem(hook.event, f"{path}.event")) is not None:
            problems.append(problem)
        if not hook.command.strip():
            problems.append(f"hook command is empty @ {path}.command")
        if hook.timeout_ms is not None and hook.timeout_ms <= 0:
            problems.append(f"timeout must be positive milliseconds, not {hook.timeout_ms} @ {path}.timeoutMs")
        try:
            compile_matcher(hook.matcher)
        except re.error as error:
            problems.append(f"matcher is not a valid regular expression ({error}) @ {path}.matcher")
    return problems
