"""Hooks: user commands run at points of a session, on the contract users know from Claude Code.

Events: sessionStart, userPromptSubmit, preToolUse, postToolUse, stop, preCompact. A hook is
`/bin/sh -c <command>` in its own process group, with the JSON event on stdin. Exit 0 continues
(JSON on stdout may add context, allow/deny a tool call, block or stop); exit 2 blocks with stderr
as the reason; any other exit, a timeout or bad JSON is reported and does not block. See
`decisions` for the output rules, `matchers` for the matcher rules and `HookOutcome` for what
"blocked" means per event.

Import from the modules: the package loads none of them, so validating definitions does not load
the runner and its processes.
"""
