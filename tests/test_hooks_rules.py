"""Hook matchers and definition checks, without running anything."""

from __future__ import annotations

import pytest

from openvaala_lsp.definitions import HookDefinition
from openvaala_lsp.hooks.matchers import compile_matcher
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.hooks.validation import HookDefinitionError, validate_hooks


@pytest.mark.parametrize("text", [None, "", "  ", "*"])
def test_absent_empty_and_star_match_everything(text: str | None) -> None:
    matcher = compile_matcher(text)
    assert matcher.matches_everything
    assert matcher.matches("Bash") and matcher.matches(None)


def test_plain_names_are_an_exact_list() -> None:
    matcher = compile_matcher("Edit|Write")
    assert matcher.names == frozenset({"Edit", "Write"})
    assert matcher.matches("Edit") and matcher.matches("Write")
    assert not matcher.matches("Editor") and not matcher.matches("edit") and not matcher.matches("MultiEdit")
    assert compile_matcher(" Edit , Write | read_file ").names == frozenset({"Edit", "Write", "read_file"})
    assert compile_matcher("shell").matches("shell") and not compile_matcher("shell").matches("shell_x")
    assert not matcher.matches(None)


def test_anything_else_is_an_unanchored_regex() -> None:
    matcher = compile_matcher("mcp__.*")
    assert matcher.pattern is not None
    assert matcher.matches("mcp__fs__read") and matcher.matches("x_mcp__y")
    assert not matcher.matches("Bash")
    anchored = compile_matcher("^(Edit|Write)$")
    assert anchored.matches("Edit") and not anchored.matches("MultiEdit")
    assert compile_matcher("Ed.t").matches("MultiEdit")  # unanchored: search, not full match


def hook(
    *,
    name: str = "h",
    event: str = "preToolUse",
    command: str = "true",
    matcher: str | None = None,
    timeout_ms: int | None = None,
) -> HookDefinition:
    return HookDefinition(name=name, event=event, command=command, matcher=matcher, timeout_ms=timeout_ms)


def test_validate_hooks_names_the_field() -> None:
    assert validate_hooks([hook(), hook(matcher="Bash|Edit"), hook(event="stop", timeout_ms=5)]) == []
    problems = validate_hooks(
        [
            hook(),
            hook(event="PreToolUse"),
            hook(event="afterEverything"),
            hook(matcher="mcp__(unclosed"),
            hook(name=" ", command=""),
            hook(timeout_ms=0),
        ]
    )
    assert problems[0] == "unknown hook event 'PreToolUse' (did you mean 'preToolUse'?) @ $.hooks[1].event"
    assert problems[1].startswith("unknown hook event 'afterEverything' (known: sessionStart, userPromptSubmit")
    assert problems[1].endswith("@ $.hooks[2].event")
    assert problems[2].startswith("matcher is not a valid regular expression (")
    assert problems[2].endswith("@ $.hooks[3].matcher")
    assert problems[3] == "hook name is empty @ $.hooks[4].name"
    assert problems[4] == "hook command is empty @ $.hooks[4].command"
    assert problems[5] == "timeout must be positive milliseconds, not 0 @ $.hooks[5].timeoutMs"
    assert len(problems) == 6


def test_runner_rejects_invalid_definitions_and_unknown_events() -> None:
    with pytest.raises(HookDefinitionError) as raised:
        HookRunner([hook(event="Stop")])
    assert raised.value.problems == ["unknown hook event 'Stop' (did you mean 'stop'?) @ $.hooks[0].event"]
    with pytest.raises(ValueError, match="unknown hook event: Stop"):
        HookRunner([]).matching("Stop", None)


def test_matching_by_event_and_subject() -> None:
    runner = HookRunner(
        [
            hook(name="all"),
            hook(name="star", matcher="*"),
            hook(name="edits", matcher="Edit|Write"),
            hook(name="bash", matcher="Bash"),
            hook(name="mcp", matcher="^mcp__"),
            hook(name="post", event="postToolUse", matcher="Write"),
            hook(name="resume", event="sessionStart", matcher="resume|fork"),
            hook(name="auto", event="preCompact", matcher="auto"),
            hook(name="stop", event="stop", matcher="never-tested"),
        ]
    )

    def names(event: str, match: str | None) -> list[str]:
        return [found.name for found in runner.matching(event, match)]

    assert names("preToolUse", "Write") == ["all", "star", "edits"]
    assert names("preToolUse", "mcp__fs__read") == ["all", "star", "mcp"]
    assert names("preToolUse", None) == ["all", "star"]
    assert names("postToolUse", "Write") == ["post"]
    assert names("sessionStart", "fork") == ["resume"] and names("sessionStart", "startup") == []
    assert names("preCompact", "auto") == ["auto"] and names("preCompact", "manual") == []
    assert names("stop", None) == ["stop"]  # stop has no subject: its matcher is ignored
    assert names("userPromptSubmit", "anything") == []
