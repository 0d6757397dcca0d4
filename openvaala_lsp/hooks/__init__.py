"""Hooks: user commands run at points of a session, on the contract users know from Claude Code.

Events: sessionStart, userPromptSubmit, preToolUse, postToolUse, stop, preCompact. A hook is
`/bin/sh -c <command>` in its own process group, with the JSON event on stdin. Exit 0 continues
(JSON on stdout may add context, allow/deny a tool call, block or stop); exit 2 blocks with stderr
as the reason; any other exit, a timeout or bad JSON is reported and does not block. See
`decisions` for the output rules, `matchers` for the matcher rules and `HookOutcome` for what
"blocked" means per event.
"""

from openvaala_lsp.hooks.events import DEFAULT_TIMEOUT_MS, HOOK_EVENTS, MATCH_SUBJECTS
from openvaala_lsp.hooks.matchers import Matcher, compile_matcher
from openvaala_lsp.hooks.outcome import OUTPUT_CAP, HookOutcome
from openvaala_lsp.hooks.runner import EVENT_VARIABLE, HookRunner
from openvaala_lsp.hooks.validation import HookDefinitionError, validate_hooks

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "EVENT_VARIABLE",
    "HOOK_EVENTS",
    "MATCH_SUBJECTS",
    "OUTPUT_CAP",
    "HookDefinitionError",
    "HookOutcome",
    "HookRunner",
    "Matcher",
    "compile_matcher",
    "validate_hooks",
]
