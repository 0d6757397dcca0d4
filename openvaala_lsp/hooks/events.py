"""The hook events and how each one treats matchers, blocks and plain output."""

from __future__ import annotations

HOOK_EVENTS = ("sessionStart", "userPromptSubmit", "preToolUse", "postToolUse", "stop", "preCompact")

MATCH_SUBJECTS = {
    "preToolUse": "tool name",
    "postToolUse": "tool name",
    "sessionStart": "source (startup, resume, fork, compact)",
    "preCompact": "trigger (manual, auto)",
}
"""Events whose matcher is tested, and against what; every other event ignores the matcher."""

EXIT_2_BLOCKS = frozenset(HOOK_EVENTS) - {"sessionStart"}
"""A session that already started cannot be blocked: exit 2 there is reported, as in Claude Code."""

DECISION_EVENTS = frozenset({"userPromptSubmit", "postToolUse", "stop", "preCompact", "preToolUse"})
"""Events where JSON `decision: "block"` blocks (on preToolUse it is Claude Code's legacy spelling of
`permissionDecision: "deny"`)."""

PLAIN_CONTEXT_EVENTS = frozenset({"userPromptSubmit", "sessionStart"})
"""Events where plain (non-JSON) stdout of a successful hook becomes context for the model."""

DEFAULT_TIMEOUT_MS = 60_000
