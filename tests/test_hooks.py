"""The hook runner with real shell commands: decisions, exit codes, stdin, environment, timeouts,
parallel runs and cancellation."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from processes import alive

from openvaala_lsp.definitions import HookDefinition
from openvaala_lsp.hooks.outcome import HookOutcome
from openvaala_lsp.hooks.runner import HookRunner

ENV = {"PATH": os.environ["PATH"]}


def script(tmp_path: Path, name: str, body: str) -> str:
    """Writes the hook script `name` and returns the command that runs it."""
    path = tmp_path / f"{name}.sh"
    path.write_text(body)
    return f"sh {shlex.quote(str(path))}"


def hook(
    name: str, command: str, *, event: str = "preToolUse", matcher: str | None = None, timeout_ms: int | None = None
) -> HookDefinition:
    return HookDefinition(name=name, event=event, command=command, matcher=matcher, timeout_ms=timeout_ms)


def printing(tmp_path: Path, name: str, output: dict[str, Any], *, event: str = "preToolUse") -> HookDefinition:
    """A hook that prints `output` as JSON and exits 0."""
    return hook(name, script(tmp_path, name, f"cat <<'EOF'\n{json.dumps(output)}\nEOF\n"), event=event)


async def run(
    runner: HookRunner, event: str, cwd: Path, payload: dict[str, Any] | None = None, match: str | None = None
) -> HookOutcome:
    # The outer bound only keeps a broken test from hanging; nothing asserts on elapsed time.
    return await asyncio.wait_for(runner.run(event, payload or {}, match=match, cwd=str(cwd), environment=ENV), 60)


async def wait_for_pid(path: Path) -> int:
    for _ in range(500):
        if path.exists() and path.read_text().endswith("\n"):
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was never written")


async def test_matchers_choose_which_hooks_run(tmp_path: Path) -> None:
    hooks = [printing(tmp_path, name, {"additionalContext": name}) for name in ("all", "edits", "bash", "mcp")]
    hooks[1].matcher, hooks[2].matcher, hooks[3].matcher = "Edit|Write", "Bash", "mcp__.*"
    runner = HookRunner(hooks)
    outcome = await run(runner, "preToolUse", tmp_path, match="Write")
    assert outcome.additional_context == ["all", "edits"]
    outcome = await run(runner, "preToolUse", tmp_path, match="mcp__files__read")
    assert outcome.additional_context == ["all", "mcp"]


async def test_json_allow_updated_input_and_context(tmp_path: Path) -> None:
    runner = HookRunner(
        [
            printing(
                tmp_path,
                "rewrite",
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": "fine",
                        "updatedInput": {"command": "ls"},
                        "additionalContext": "from rewrite",
                    }
                },
            ),
            printing(
                tmp_path,
                "later",
                {"hookSpecificOutput": {"updatedInput": {"command": "pwd"}}, "additionalContext": "from later"},
            ),
            printing(tmp_path, "warn", {"systemMessage": "careful"}),
        ]
    )
    outcome = await run(runner, "preToolUse", tmp_path, {"tool_name": "shell"}, match="shell")
    assert not outcome.blocked and outcome.reason is None and outcome.errors == []
    assert outcome.updated_input == {"command": "pwd"}  # the last hook in definition order wins
    assert outcome.additional_context == ["from rewrite", "from later"]
    assert outcome.system_messages == ["careful"]


def permission(decision: str, reason: str | None = None) -> dict[str, Any]:
    specific = {"permissionDecision": decision} | ({"permissionDecisionReason": reason} if reason else {})
    return {"hookSpecificOutput": specific}


async def test_json_deny_blocks_and_ask_asks(tmp_path: Path) -> None:
    deny, ask = permission("deny", "no rm -rf"), permission("ask", "touches prod")
    runner = HookRunner([printing(tmp_path, "deny", deny), printing(tmp_path, "ask", ask)])
    outcome = await run(runner, "preToolUse", tmp_path, match="shell")
    assert outcome.blocked and outcome.reason == "no rm -rf"  # a deny outweighs an ask
    assert outcome.permission == "ask" and outcome.ask_reason == "touches prod"
    assert outcome.errors == []


async def test_ask_outweighs_allow_in_any_order(tmp_path: Path) -> None:
    for first, second in (("allow", "ask"), ("ask", "allow")):
        runner = HookRunner(
            [printing(tmp_path, first, permission(first)), printing(tmp_path, second, permission(second))]
        )
        outcome = await run(runner, "preToolUse", tmp_path, match="shell")
        assert not outcome.blocked and outcome.permission == "ask"
        assert outcome.ask_reason == "hook 'ask' asks for the user's approval"
    alone = await run(HookRunner([printing(tmp_path, "allow", permission("allow"))]), "preToolUse", tmp_path)
    assert alone.permission == "allow" and alone.ask_reason is None and not alone.blocked


async def test_decision_block_and_continue_false(tmp_path: Path) -> None:
    block = {"decision": "block", "reason": "lint failed"}
    for event in ("postToolUse", "userPromptSubmit", "stop", "preCompact"):
        outcome = await run(HookRunner([printing(tmp_path, "b", block, event=event)]), event, tmp_path)
        assert outcome.blocked and outcome.reason == "lint failed", event
    # A session that started cannot be blocked.
    outcome = await run(HookRunner([printing(tmp_path, "b", block, event="sessionStart")]), "sessionStart", tmp_path)
    assert not outcome.blocked and outcome.errors == []

    stopping = HookRunner(
        [
            printing(tmp_path, "halt", {"continue": False, "stopReason": "budget spent"}, event="stop"),
            printing(tmp_path, "quiet", {"continue": False}, event="stop"),
            printing(tmp_path, "goes-on", {"continue": True}, event="stop"),
        ]
    )
    outcome = await run(stopping, "stop", tmp_path)
    assert outcome.stop and not outcome.blocked
    assert outcome.stop_reason == "budget spent\n\nstopped by hook 'quiet'"


async def test_exit_2_blocks_with_stderr_as_reason(tmp_path: Path) -> None:
    body = 'echo \'{"decision": "approve"}\'\nprintf "  writing outside the project  \\n" >&2\nexit 2\n'
    runner = HookRunner([hook("guard", script(tmp_path, "guard", body)), hook("silent", "exit 2")])
    outcome = await run(runner, "preToolUse", tmp_path, match="write_file")
    assert outcome.blocked
    assert outcome.reason == "writing outside the project\n\nblocked by hook 'silent' (exit code 2)"
    assert outcome.errors == []

    starting = HookRunner([hook("start", script(tmp_path, "guard", body), event="sessionStart")])
    outcome = await run(starting, "sessionStart", tmp_path, match="startup")
    assert not outcome.blocked
    assert outcome.errors == ["hook 'start' exited with code 2: writing outside the project"]


async def test_other_exit_codes_are_reported_and_do_not_block(tmp_path: Path) -> None:
    runner = HookRunner(
        [
            hook("one", "echo partial; echo 'lint crashed' >&2; exit 1"),
            hook("three", "exit 3"),
            hook("signalled", "kill -TERM $$"),
            hook("fine", "exit 0"),
        ]
    )
    outcome = await run(runner, "preToolUse", tmp_path, match="shell")
    assert not outcome.blocked and outcome.reason is None
    assert outcome.errors == [
        "hook 'one' exited with code 1: lint crashed",
        "hook 'three' exited with code 3",
        "hook 'signalled' was killed by SIGTERM",
    ]


async def test_invalid_json_and_wrong_field_types_are_reported(tmp_path: Path) -> None:
    runner = HookRunner(
        [
            hook("broken", "echo '{not json'", event="postToolUse"),
            printing(tmp_path, "typed", {"decision": "block", "reason": 5, "continue": "no"}, event="postToolUse"),
            printing(tmp_path, "odd", {"decision": "deny"}, event="postToolUse"),
        ]
    )
    outcome = await run(runner, "postToolUse", tmp_path, match="shell")
    assert outcome.blocked and outcome.reason == "blocked by hook 'typed'"
    assert not outcome.stop
    assert outcome.errors == [
        "hook 'broken' printed invalid JSON (Expecting property name enclosed in double quotes at line 1 column 2); "
        "its output was ignored",
        "hook 'typed': continue must be true or false; ignored",
        "hook 'typed': reason must be a string; ignored",
        "hook 'odd': unknown decision 'deny'; ignored",
    ]
    unknown = {"hookSpecificOutput": {"permissionDecision": "maybe", "updatedInput": "ls"}}
    outcome = await run(HookRunner([printing(tmp_path, "unsure", unknown)]), "preToolUse", tmp_path, match="x")
    assert not outcome.blocked and outcome.updated_input is None
    assert outcome.errors == [
        "hook 'unsure': unknown permissionDecision 'maybe'; ignored",
        "hook 'unsure': hookSpecificOutput.updatedInput must be an object; ignored",
    ]


async def test_plain_stdout_is_context_only_for_prompts_and_session_start(tmp_path: Path) -> None:
    events = ("sessionStart", "userPromptSubmit", "preToolUse", "postToolUse", "stop", "preCompact")
    runner = HookRunner([hook(f"say-{event}", "echo '  remember the style guide '", event=event) for event in events])
    for event in events:
        outcome = await run(runner, event, tmp_path, match="x")
        expected = ["remember the style guide"] if event in ("sessionStart", "userPromptSubmit") else []
        assert outcome.additional_context == expected, event
        assert outcome.errors == [] and not outcome.blocked


async def test_output_strings_are_capped(tmp_path: Path) -> None:
    runner = HookRunner(
        [
            hook("loud", "head -c 30000 /dev/zero | tr '\\0' r >&2; exit 2"),
            printing(tmp_path, "long", {"additionalContext": "c" * 20_000}),
        ]
    )
    outcome = await run(runner, "preToolUse", tmp_path, match="x")
    assert outcome.reason is not None and 9_000 < len(outcome.reason) < 10_100
    assert "bytes omitted" in outcome.reason
    [context] = outcome.additional_context
    assert context == "c" * 10_000 + "\n[... 10000 more characters cut]"


async def test_timeout_kills_the_process_group_and_does_not_block(tmp_path: Path) -> None:
    body = "sleep 100 &\necho $! > background.pid\necho $$ > shell.pid\nsleep 100\n"
    runner = HookRunner(
        [
            hook("slow", script(tmp_path, "slow", body), timeout_ms=300),
            printing(tmp_path, "quick", {"additionalContext": "quick ran"}),
        ]
    )
    outcome = await run(runner, "preToolUse", tmp_path, match="x")
    assert not outcome.blocked
    assert outcome.errors == ["hook 'slow' timed out after 300 ms; it and every process it started were stopped"]
    assert outcome.additional_context == ["quick ran"]
    assert not alive(int((tmp_path / "background.pid").read_text()))
    assert not alive(int((tmp_path / "shell.pid").read_text()))


async def test_the_event_arrives_on_stdin(tmp_path: Path) -> None:
    runner = HookRunner(
        [
            hook("record", "cat > event.json"),
            hook("ignores-stdin", "exit 0"),  # must not stall on a payload larger than a pipe holds
        ]
    )
    payload = {
        "session_id": "sess_1",
        "conversation_id": "conv_1",
        "tool_name": "shell",
        "tool_input": {"command": "ls", "big": "x" * 300_000},
    }
    outcome = await run(runner, "preToolUse", tmp_path, payload, match="shell")
    assert outcome == HookOutcome()
    seen = json.loads((tmp_path / "event.json").read_text())
    assert seen == {**payload, "hook_event_name": "preToolUse", "cwd": str(tmp_path)}


async def test_environment_is_exactly_the_given_one_and_cwd_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENVAALA_SHOULD_NOT_LEAK", "1")
    work = tmp_path / "work"
    work.mkdir()
    runner = HookRunner([hook("env", "env > env.txt; pwd > pwd.txt", event="userPromptSubmit")])
    given = {"PATH": os.environ["PATH"], "GREETING": "hello world"}
    outcome = await asyncio.wait_for(
        runner.run("userPromptSubmit", {"prompt": "hi"}, match=None, cwd=str(work), environment=given), 60
    )
    assert outcome == HookOutcome()
    seen = dict(line.split("=", 1) for line in (work / "env.txt").read_text().splitlines())
    for added in ("PWD", "SHLVL", "_", "OLDPWD"):  # what the shell itself may add
        seen.pop(added, None)
    assert seen == {**given, "OPENVAALA_HOOK_EVENT": "userPromptSubmit"}
    assert (work / "pwd.txt").read_text() == f"{work}\n"


async def test_hooks_run_in_parallel_and_report_in_definition_order(tmp_path: Path) -> None:
    # "first" can only finish after "second" has run, so it finishes last; it still comes first.
    first = (
        "for i in $(seq 1 500); do [ -e second.done ] && break; sleep 0.02; done\n"
        "[ -e second.done ] || { echo 'ran alone' >&2; exit 1; }\n"
        "echo first >&2; exit 2\n"
    )
    runner = HookRunner(
        [
            hook("first", script(tmp_path, "first", first)),
            hook("second", "touch second.done; echo second >&2; exit 2"),
            printing(tmp_path, "third", {"additionalContext": "third"}),
        ]
    )
    outcome = await run(runner, "preToolUse", tmp_path, match="x")
    assert outcome.errors == []
    assert outcome.blocked and outcome.reason == "first\n\nsecond"
    assert outcome.additional_context == ["third"]


async def test_cancellation_kills_every_hook_process(tmp_path: Path) -> None:
    hooks = [
        hook(name, script(tmp_path, name, f"sleep 100 &\necho $! > {name}.job\necho $$ > {name}.shell\nsleep 100\n"))
        for name in ("a", "b")
    ]
    task = asyncio.create_task(HookRunner(hooks).run("preToolUse", {}, match="x", cwd=str(tmp_path), environment=ENV))
    pids = [await wait_for_pid(tmp_path / f"{name}.{kind}") for name in ("a", "b") for kind in ("job", "shell")]
    assert all(alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert not any(alive(pid) for pid in pids)


async def test_a_hook_that_cannot_start_is_reported(tmp_path: Path) -> None:
    runner = HookRunner([hook("nowhere", "true")])
    outcome = await run(runner, "preToolUse", tmp_path / "missing", match="x")
    assert not outcome.blocked
    assert outcome.errors == [f"hook 'nowhere' could not start in {tmp_path / 'missing'}: No such file or directory"]


async def test_no_matching_hook_runs_nothing(tmp_path: Path) -> None:
    runner = HookRunner([hook("never", "touch ran", matcher="Bash")])
    assert await run(runner, "preToolUse", tmp_path, match="shell") == HookOutcome()
    assert not (tmp_path / "ran").exists()


async def test_background_job_holding_the_output_is_stopped_and_output_kept(tmp_path: Path) -> None:
    body = 'sleep 100 &\necho $! > job.pid\necho \'{"additionalContext": "kept"}\'\n'
    outcome = await run(HookRunner([hook("bg", script(tmp_path, "bg", body))]), "preToolUse", tmp_path, match="x")
    assert outcome == HookOutcome(additional_context=["kept"])
    assert not alive(int((tmp_path / "job.pid").read_text()))
