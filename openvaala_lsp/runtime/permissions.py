"""Whether a tool call runs, waits for the user's approval, or is refused.

In order: a remembered `allowAlways` of the conversation; the agent's rule for the tool (its exact
name, else the longest matching glob); the agent's `default`; else the defaults a careful user would
pick — reads, file writes and edits (the file tools keep to the workspace themselves), skills,
sub-agents, MCP and editor tools run; the shell runs inside the sandbox; a command that must leave the
sandbox (`outside_sandbox`, or a sandbox that cannot start here) asks.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from typing import Any

import attrs

from openvaala_lsp.definitions import AgentDefinition, PermissionDecision, Sandbox, SandboxMode
from openvaala_lsp.model import AlwaysAllowed
from openvaala_lsp.protocol.api import ApprovalRequest
from openvaala_lsp.tools.base import SandboxPolicy, ToolContext
from openvaala_lsp.tools.sandbox import SandboxState

SHELL = "shell"
PATH_ARGUMENTS = ("path", "file_path", "workdir")
_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9:_-]*$")


@attrs.frozen
class Verdict:
    decision: PermissionDecision
    reason: str  # for the model when refused, for the user when asked
    sandbox: SandboxPolicy | None  # where a shell command runs if it runs
    request: ApprovalRequest | None = None  # what the user is asked


def sandbox_policy(sandbox: Sandbox | None, context: ToolContext) -> SandboxPolicy | None:
    """The sandbox commands run in for this agent, None when it is off."""
    sandbox = sandbox or Sandbox()
    if sandbox.mode is SandboxMode.OFF:
        return None
    writable = tuple(context.roots) if sandbox.mode is SandboxMode.WORKSPACE_WRITE else ()
    return SandboxPolicy(writable=writable, network=sandbox.network)


def decide(
    tool: str,
    arguments: dict[str, Any],
    agent: AgentDefinition | None,
    remembered: list[AlwaysAllowed],
    context: ToolContext,
    sandbox: SandboxState,
) -> Verdict:
    policy = sandbox_policy(agent.sandbox if agent else None, context)
    outside = tool == SHELL and bool(arguments.get("outside_sandbox"))
    command = arguments.get("command") if tool == SHELL and isinstance(arguments.get("command"), str) else None
    runs_in = None if outside or policy is None or not sandbox.usable else policy

    def verdict(decision: PermissionDecision, reason: str) -> Verdict:
        request = None
        if decision is PermissionDecision.ASK:
            paths = [value for key in PATH_ARGUMENTS if isinstance(value := arguments.get(key), str)]
            request = ApprovalRequest(
                tool=tool, arguments=arguments, reason=reason, command=command, paths=paths or None
            )
        return Verdict(decision, reason, runs_in, request)

    if any(remembers(rule, tool, command) for rule in remembered):
        return verdict(PermissionDecision.ALLOW, "allowed for the rest of the conversation")
    rules = agent.permissions.tools or {} if agent and agent.permissions else {}
    rule = rules.get(tool)
    if rule is None:
        globs = sorted((p for p in rules if fnmatch.fnmatchcase(tool, p)), key=len, reverse=True)
        rule = rules[globs[0]] if globs else None
    if rule is not None:
        return verdict(rule, f"the agent's rule for {tool}: {rule.value}")
    if agent and agent.permissions and agent.permissions.default is not None:
        return verdict(agent.permissions.default, f"the agent's default: {agent.permissions.default.value}")
    if tool != SHELL or policy is None:
        return verdict(PermissionDecision.ALLOW, "allowed by default")
    if outside:
        why = arguments.get("justification")
        return verdict(PermissionDecision.ASK, f"runs outside the sandbox{f': {why}' if isinstance(why, str) else ''}")
    if not sandbox.usable:
        return verdict(
            PermissionDecision.ASK, f"the sandbox cannot start here ({sandbox.reason}), so it would run unsandboxed"
        )
    return verdict(PermissionDecision.ALLOW, "allowed inside the sandbox")


_CONTROL = re.compile(r"[;&|`$<>\n]")  # chaining, substitution, redirection: no prefix speaks for those


def remembers(rule: AlwaysAllowed, tool: str, command: str | None) -> bool:
    """Whether a remembered `allowAlways` covers this call. A shell rule covers only a plain command
    with its prefix: `git status -s` under `git status`, but not `git status && curl … | sh`."""
    if rule.tool != tool:
        return False
    if rule.command_prefix is None:
        return True
    if command is None or _CONTROL.search(command):
        return False
    return command == rule.command_prefix or command.startswith(rule.command_prefix + " ")


def always_allowed(tool: str, command: str | None) -> AlwaysAllowed:
    """What `allowAlways` remembers: the tool, and for the shell the command's prefix — its program and,
    when it reads as one, its subcommand (`git status -s` remembers `git status`; `ls -la`, `ls`)."""
    if tool != SHELL or not command:
        return AlwaysAllowed(tool=tool)
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return AlwaysAllowed(tool=tool)
    prefix = words[:2] if len(words) > 1 and _SUBCOMMAND.match(words[1]) else words[:1]
    return AlwaysAllowed(tool=tool, command_prefix=" ".join(prefix))
