"""The decision table of `runtime/permissions.py`: rules, globs, defaults, hooks, remembered answers."""

from __future__ import annotations

from typing import Any

import pytest

from openvaala_lsp.definitions import AgentDefinition, PermissionDecision, Permissions, Sandbox, SandboxMode
from openvaala_lsp.model import AlwaysAllowed
from openvaala_lsp.runtime.permissions import HookPermission, always_allowed, decide, remembers
from openvaala_lsp.tools.base import ToolContext
from openvaala_lsp.tools.sandbox import SandboxState

ASK, ALLOW, DENY = PermissionDecision.ASK, PermissionDecision.ALLOW, PermissionDecision.DENY
CONTEXT = ToolContext(directory="/work/p", roots=["/work/p", "/work/q"], environment={})
USABLE = SandboxState(True, "/usr/bin/bwrap", "bubblewrap")
BROKEN = SandboxState(False, "/usr/bin/bwrap", "user namespaces are off")


def agent(
    default: PermissionDecision | None = None, sandbox: Sandbox | None = None, **tools: PermissionDecision
) -> AgentDefinition:
    permissions = Permissions(default=default, tools=dict(tools) or None) if default or tools else None
    return AgentDefinition(name="a", permissions=permissions, sandbox=sandbox)


def shell(command: str = "make test", **extra: Any) -> dict[str, Any]:
    return {"command": command, **extra}


def test_defaults_a_careful_user_would_pick() -> None:
    for tool, arguments in [
        ("read_file", {"path": "a"}),
        ("write_file", {"path": "a"}),
        ("edit", {}),
        ("mcp__x__y", {}),
    ]:
        assert decide(tool, arguments, None, [], CONTEXT, USABLE).decision is ALLOW
    inside = decide("shell", shell(), None, [], CONTEXT, USABLE)
    assert inside.decision is ALLOW and inside.sandbox is not None
    assert inside.sandbox.writable == ("/work/p", "/work/q") and inside.sandbox.network is False
    outside = decide("shell", shell(outside_sandbox=True, justification="pip install"), None, [], CONTEXT, USABLE)
    assert outside.decision is ASK and outside.sandbox is None
    assert outside.reason == "runs outside the sandbox: pip install"
    assert outside.request is not None and outside.request.command == "make test"
    broken = decide("shell", shell(), None, [], CONTEXT, BROKEN)
    assert broken.decision is ASK and broken.sandbox is None and "user namespaces are off" in broken.reason
    assert broken.note is not None and "cannot start here" in broken.note


def test_sandbox_modes() -> None:
    read_only = decide(
        "shell", shell(), agent(sandbox=Sandbox(mode=SandboxMode.READ_ONLY, network=True)), [], CONTEXT, USABLE
    )
    assert read_only.sandbox is not None and read_only.sandbox.writable == () and read_only.sandbox.network
    off = decide("shell", shell(), agent(sandbox=Sandbox(mode=SandboxMode.OFF)), [], CONTEXT, BROKEN)
    assert off.decision is ALLOW and off.sandbox is None and off.note is None  # off is the user's choice


def test_rules_exact_name_then_longest_glob_then_default() -> None:
    rules = agent(DENY, **{"mcp__*": ASK, "mcp__github__*": ALLOW, "shell": ASK})
    assert decide("mcp__github__issues", {}, rules, [], CONTEXT, USABLE).decision is ALLOW
    assert decide("mcp__jira__search", {}, rules, [], CONTEXT, USABLE).decision is ASK
    assert decide("shell", shell(), rules, [], CONTEXT, USABLE).decision is ASK
    denied = decide("read_file", {}, rules, [], CONTEXT, USABLE)
    assert denied.decision is DENY and denied.reason == "the agent's default: deny" and denied.request is None
    # an explicit allow lets a command leave the sandbox unasked
    assert decide("shell", shell(outside_sandbox=True), agent(shell=ALLOW), [], CONTEXT, USABLE).decision is ALLOW


def test_hooks_ask_over_everything_and_allow_skips_asking_but_not_denying() -> None:
    asks = HookPermission("ask", "looks at prod")
    verdict = decide("read_file", {"path": "x"}, agent(ALLOW), [AlwaysAllowed(tool="read_file")], CONTEXT, USABLE, asks)
    assert verdict.decision is ASK and verdict.reason == "looks at prod"
    assert verdict.request is not None and verdict.request.paths == ["x"]
    allows = HookPermission("allow")
    assert decide("shell", shell(), agent(shell=ASK), [], CONTEXT, USABLE, allows).decision is ALLOW
    assert decide("shell", shell(), agent(shell=DENY), [], CONTEXT, USABLE, allows).decision is DENY
    assert decide("shell", shell(outside_sandbox=True), None, [], CONTEXT, USABLE, allows).decision is ALLOW


@pytest.mark.parametrize(
    ("command", "prefix"),
    [("git status -s", "git status"), ("ls -la", "ls"), ("npm run build", "npm run"), ("'my tool' x", "my tool x")],
)
def test_allow_always_remembers_a_prefix(command: str, prefix: str) -> None:
    assert always_allowed("shell", shell(command)).command_prefix == prefix
    assert always_allowed("read_file", {"path": "a"}) == AlwaysAllowed(tool="read_file")


def test_a_remembered_prefix_covers_only_plain_commands_inside_its_bounds() -> None:
    rule = AlwaysAllowed(tool="shell", command_prefix="git status")
    assert remembers(rule, "shell", "git status")
    assert remembers(rule, "shell", "git status --short")
    for command in [
        "git statusx",
        "git status; rm -rf /",
        "git status && curl x | sh",
        "git status $(id)",
        "git status\nrm x",
        "git push",
    ]:
        assert not remembers(rule, "shell", command), command
    assert not remembers(rule, "shell", "git status", outside=True)  # remembered inside the sandbox only
    outside = always_allowed("shell", shell("curl -s x", outside_sandbox=True))
    assert outside.outside_sandbox and remembers(outside, "shell", "curl -s y", outside=True)
    assert remembers(AlwaysAllowed(tool="edit"), "edit", None) and not remembers(
        AlwaysAllowed(tool="edit"), "write_file", None
    )
    verdict = decide("shell", shell("git status -s"), agent(shell=ASK), [rule], CONTEXT, USABLE)
    assert verdict.decision is ALLOW and verdict.reason == "allowed for the rest of the conversation"
