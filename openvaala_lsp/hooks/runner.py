"""Running the hooks of an event: every matching hook at once, results in definition order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from openvaala_lsp.definitions import HookDefinition
from openvaala_lsp.hooks.decisions import interpret
from openvaala_lsp.hooks.events import DEFAULT_TIMEOUT_MS, HOOK_EVENTS, MATCH_SUBJECTS
from openvaala_lsp.hooks.matchers import Matcher, compile_matcher
from openvaala_lsp.hooks.outcome import HookOutcome, merge_outcomes
from openvaala_lsp.hooks.process import run_hook_process
from openvaala_lsp.hooks.validation import HookDefinitionError, validate_hooks

SHELL = "/bin/sh"
READ_LIMIT = 1024 * 1024
"""Bytes of stdout (and of stderr) kept per hook; JSON longer than this is rejected."""

EVENT_VARIABLE = "OPENVAALA_HOOK_EVENT"


class HookRunner:
    """Runs hook definitions; HookDefinitionError if `validate_hooks` finds problems in them."""

    def __init__(self, hooks: Sequence[HookDefinition]) -> None:
        problems = validate_hooks(hooks)
        if problems:
            raise HookDefinitionError(problems)
        self._hooks: list[tuple[HookDefinition, Matcher]] = [(hook, compile_matcher(hook.matcher)) for hook in hooks]

    def matching(self, event: str, match: str | None) -> list[HookDefinition]:
        """The hooks `run` would start, in definition order. `match` is what the event's matcher is
        tested against (see MATCH_SUBJECTS); when it is None only hooks matching everything run."""
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event: {event}")
        uses_matcher = event in MATCH_SUBJECTS
        return [
            hook
            for hook, matcher in self._hooks
            if hook.event == event and (not uses_matcher or matcher.matches(match))
        ]

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        match: str | None,
        cwd: str,
        environment: Mapping[str, str],
    ) -> HookOutcome:
        """Runs the matching hooks in parallel. Each gets on stdin `payload` (snake_case keys, as in
        Claude Code: `session_id`, `conversation_id`, `tool_name`, `tool_input`, `tool_response`,
        `prompt`, `source`, `trigger`, ...) plus `hook_event_name` and `cwd`; it runs in `cwd` with
        exactly `environment` plus OPENVAALA_HOOK_EVENT. Cancelling this stops every hook process."""
        hooks = self.matching(event, match)
        if not hooks:
            return HookOutcome()
        stdin = json.dumps({**payload, "hook_event_name": event, "cwd": cwd}).encode()
        env = {**environment, EVENT_VARIABLE: event}
        # A TaskGroup, not gather: on cancellation (or a bug in one hook's handling) it waits until
        # every other hook's process group has been stopped.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._run_one(hook, event, stdin, cwd, env)) for hook in hooks]
        return merge_outcomes([task.result() for task in tasks])

    async def _run_one(
        self, hook: HookDefinition, event: str, stdin: bytes, cwd: str, env: Mapping[str, str]
    ) -> HookOutcome:
        timeout_ms = hook.timeout_ms or DEFAULT_TIMEOUT_MS
        try:
            result = await run_hook_process(
                [SHELL, "-c", hook.command],
                stdin=stdin,
                cwd=cwd,
                env=env,
                time_limit=timeout_ms / 1000,
                read_limit=READ_LIMIT,
            )
        except OSError as error:
            return HookOutcome(errors=[f"hook '{hook.name}' could not start in {cwd}: {error.strerror or error}"])
        return interpret(hook.name, event, result, timeout_ms=timeout_ms, read_limit=READ_LIMIT)
