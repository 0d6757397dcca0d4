"""Reading one finished hook: its exit code, then (on exit 0) its stdout as JSON or plain text.

Exit 0: stdout starting with `{` is JSON (Claude Code's fields: `continue`/`stopReason`,
`decision`/`reason`, `systemMessage`, `additionalContext`, and in `hookSpecificOutput`
`permissionDecision`/`permissionDecisionReason`/`updatedInput`/`additionalContext`; unknown fields
are ignored, `hookEventName` is not checked); other stdout is context on userPromptSubmit and
sessionStart only. Exit 2: blocks with stderr as the reason; stdout is ignored. Any other exit,
a signal, a timeout or unreadable JSON: reported in `errors`, never blocking.

`permissionDecision`: "deny" blocks the call; "ask" sends it to the user for approval (the same path
as an agent's `ask` permission); "allow" runs it without asking, past the agent's permissions.
"""

from __future__ import annotations

import json
import signal
from typing import Any, TypeVar

from openvaala_lsp.hooks.events import DECISION_EVENTS, EXIT_2_BLOCKS, PLAIN_CONTEXT_EVENTS
from openvaala_lsp.hooks.outcome import OUTPUT_CAP, HookOutcome, cap
from openvaala_lsp.hooks.process import HookProcessResult

ERROR_STDERR_HEAD = 1_000
"""Characters of stderr quoted in a non-blocking error."""

T = TypeVar("T")
_KIND_NAMES = {str: "a string", bool: "true or false", dict: "an object"}


def _failure(message: str) -> HookOutcome:
    return HookOutcome(errors=[message])


def _exit_description(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


class _Reader:
    """Typed access to the hook's JSON; a field of the wrong type is reported and ignored."""

    def __init__(self, name: str, outcome: HookOutcome) -> None:
        self.name = name
        self.outcome = outcome

    def get(self, source: dict[str, Any], key: str, kind: type[T], where: str = "") -> T | None:
        value = source.get(key)
        if value is None or isinstance(value, kind):
            return value
        self.outcome.errors.append(f"hook '{self.name}': {where}{key} must be {_KIND_NAMES[kind]}; ignored")
        return None


def _permission(reader: _Reader, specific: dict[str, Any]) -> None:
    outcome = reader.outcome
    decision = reader.get(specific, "permissionDecision", str, "hookSpecificOutput.")
    reason = reader.get(specific, "permissionDecisionReason", str, "hookSpecificOutput.")
    if decision == "deny":
        outcome.blocked = True
        outcome.reason = cap(reason or f"denied by hook '{reader.name}'")
    elif decision == "allow":
        outcome.permission = "allow"
    elif decision == "ask":
        outcome.permission = "ask"
        outcome.ask_reason = cap(reason or f"hook '{reader.name}' asks for the user's approval")
    elif decision is not None:
        outcome.errors.append(f"hook '{reader.name}': unknown permissionDecision '{decision}'; ignored")
    updated = reader.get(specific, "updatedInput", dict, "hookSpecificOutput.")
    if updated is not None:
        outcome.updated_input = updated


def _from_json(name: str, event: str, data: dict[str, Any]) -> HookOutcome:
    outcome = HookOutcome()
    reader = _Reader(name, outcome)
    if reader.get(data, "continue", bool) is False:
        outcome.stop = True
        outcome.stop_reason = cap(reader.get(data, "stopReason", str) or f"stopped by hook '{name}'")
    if message := reader.get(data, "systemMessage", str):
        outcome.system_messages.append(cap(message))
    decision = reader.get(data, "decision", str)
    if decision == "block":
        if event in DECISION_EVENTS:
            outcome.blocked = True
            outcome.reason = cap(reader.get(data, "reason", str) or f"blocked by hook '{name}'")
    elif decision not in (None, "approve"):
        outcome.errors.append(f"hook '{name}': unknown decision '{decision}'; ignored")
    contexts = [reader.get(data, "additionalContext", str)]
    specific = reader.get(data, "hookSpecificOutput", dict)
    if specific is not None:
        contexts.append(reader.get(specific, "additionalContext", str, "hookSpecificOutput."))
        if event == "preToolUse":
            _permission(reader, specific)
    outcome.additional_context.extend(cap(context) for context in contexts if context)
    return outcome


def _from_stdout(name: str, event: str, result: HookProcessResult, read_limit: int) -> HookOutcome:
    text = result.stdout.render(read_limit).strip()
    if not text.startswith("{"):
        return HookOutcome(additional_context=[cap(text)] if text and event in PLAIN_CONTEXT_EVENTS else [])
    if result.stdout.total_bytes > read_limit:
        return _failure(f"hook '{name}' printed more than {read_limit} bytes of JSON; its output was ignored")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return _failure(
            f"hook '{name}' printed invalid JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            "its output was ignored"
        )
    return _from_json(name, event, data)  # an object: valid JSON that starts with '{' is one


def interpret(name: str, event: str, result: HookProcessResult, *, timeout_ms: int, read_limit: int) -> HookOutcome:
    """The outcome of one hook that ran (or was stopped)."""
    if result.timed_out or result.exit_code is None:
        return _failure(f"hook '{name}' timed out after {timeout_ms} ms; it and every process it started were stopped")
    stderr = result.stderr.render(OUTPUT_CAP).strip()
    if result.exit_code == 2 and event in EXIT_2_BLOCKS:
        return HookOutcome(blocked=True, reason=cap(stderr or f"blocked by hook '{name}' (exit code 2)"))
    if result.exit_code != 0:
        head = stderr if len(stderr) <= ERROR_STDERR_HEAD else stderr[:ERROR_STDERR_HEAD] + " [...]"
        return _failure(f"hook '{name}' {_exit_description(result.exit_code)}" + (f": {head}" if head else ""))
    return _from_stdout(name, event, result, read_limit)
