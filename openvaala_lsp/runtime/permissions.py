"""Whether a tool call runs, waits for the user's approval, or is refused.

In order: a preToolUse hook that asks; a write to what governs the agent (`protected.py`), which asks
for that one write unless a rule denies it; a remembered `allowAlways` of the conversation
(`remembered_commands.py` says which commands one covers); the agent's rule for the tool (its exact
name, else the longest matching glob), then its `default`; a hook that allows; else the defaults a
careful user would pick — reads, file writes and edits (the file tools keep to the workspace
themselves), skills, sub-agents, MCP and editor tools run; the shell runs inside the sandbox; a
command that must leave the sandbox (`outside_sandbox`, or a sandbox that cannot start here) asks.
An explicit `allow` rule for the shell lets its commands leave the sandbox unasked too.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any

import attrs

from openvaala_lsp.definitions import AgentDefinition, PermissionDecision, Sandbox, SandboxMode
from openvaala_lsp.model import AlwaysAllowed
from openvaala_lsp.protocol.api import ApprovalRequest
from openvaala_lsp.runtime import remembered_commands
from openvaala_lsp.tools import protected
from openvaala_lsp.tools.base import SandboxPolicy, ToolContext
from openvaala_lsp.tools.sandbox import SandboxState

SHELL = "shell"
PATH_ARGUMENTS = ("path", "file_path", "workdir")
WRITING_TOOLS = ("write_file", "edit")  # the file tools that change the file at `path`
GOVERNING_WRITE = (
    "writes {path}, which governs the agent (openvaala's project configuration, agents and skills, or "
    "git's hooks and config): it needs your approval of this one write"
)


@attrs.frozen
class Verdict:
    decision: PermissionDecision
    reason: str  # for the model when refused, for the user when asked
    sandbox: SandboxPolicy | None  # where a shell command runs if it runs
    request: ApprovalRequest | None = None  # what the user is asked
    note: str | None = None  # for the model with the result: why it ran unsandboxed
    governing: str | None = None  # the real path of what governs the agent that the call writes
    remembered: bool = False  # allowed by a remembered `allowAlways`: git runs with its commands off


def sandbox_policy(sandbox: Sandbox | None, context: ToolContext) -> SandboxPolicy | None:
    """The sandbox commands run in for this agent, None when it is off: the workspace folders writable
    (or not), the runtime's own folders hidden, the credentials and `denyRead` unreadable, what governs
    the agent read-only, and the sockets the agent's sandbox lets it reach."""
    sandbox = sandbox or Sandbox()
    if sandbox.mode is SandboxMode.OFF:
        return None
    writable = tuple(context.roots) if sandbox.mode is SandboxMode.WORKSPACE_WRITE else ()
    hidden = protected.runtime_paths(create=True)
    sockets = [path for entry in sandbox.allow_unix_sockets or () for path in protected.expand(entry, context.roots)]
    return SandboxPolicy(
        writable=writable,
        visible=(*context.roots, context.directory),
        network=sandbox.network,
        hidden=hidden,
        unreadable=tuple(path for path in context.protected.unreadable if path not in hidden),
        read_only=context.protected.governing,
        unix_sockets=tuple(sockets),
    )


def decide(
    tool: str,
    arguments: dict[str, Any],
    agent: AgentDefinition | None,
    remembered: list[AlwaysAllowed],
    context: ToolContext,
    sandbox: SandboxState,
    hook: HookPermission | None = None,
) -> Verdict:
    """In order: a hook that asks; a write to what governs the agent (asks, or a deny rule refuses);
    a remembered `allowAlways` (unless, for a command run unsandboxed, PATH could find a program the
    agent planted); the agent's rule for the tool, then its default (a hook's allow skips their
    asking, never their deny); a hook that allows; the defaults."""
    policy = sandbox_policy(agent.sandbox if agent else None, context)
    outside = tool == SHELL and arguments.get("outside_sandbox") is True
    command = arguments.get("command") if tool == SHELL and isinstance(arguments.get("command"), str) else None
    unusable = tool == SHELL and policy is not None and not sandbox.usable
    runs_in = None if outside or policy is None or not sandbox.usable else policy
    note = f"[ran without the sandbox, which cannot start here: {sandbox.reason}]" if unusable and not outside else None
    governing = governing_write(tool, arguments, context)

    def verdict(decision: PermissionDecision, reason: str, *, kept: bool = False) -> Verdict:
        request = None
        if decision is PermissionDecision.ASK:
            paths = [value for key in PATH_ARGUMENTS if isinstance(value := arguments.get(key), str)]
            request = ApprovalRequest(
                tool=tool, arguments=arguments, reason=reason, command=command, paths=paths or None
            )
        said = note if decision is not PermissionDecision.DENY else None
        return Verdict(decision, reason, runs_in, request, said, governing, kept)

    rule, why = _rule(tool, agent)
    if hook is not None and hook.decision == "ask":
        return verdict(PermissionDecision.ASK, hook.reason or "a hook asks for the user's approval")
    if governing is not None:  # neither a rule's allow, a hook's nor a remembered answer lets it through
        if rule is PermissionDecision.DENY:
            return verdict(rule, f"{why}: {rule.value}")
        return verdict(
            PermissionDecision.ASK, GOVERNING_WRITE.format(path=_named(arguments["path"], governing, context))
        )
    if any(remembers(kept, tool, command, outside) for kept in remembered):
        planted = None
        if command is not None and runs_in is None:  # a program the agent put on PATH matters unsandboxed
            planted = remembered_commands.planted_path(command, context.environment, context.roots)
        if planted is None:
            return verdict(PermissionDecision.ALLOW, "allowed for the rest of the conversation", kept=True)
        return verdict(
            PermissionDecision.ASK,
            f"allowed for the rest of the conversation, but PATH looks in {planted} (in the workspace, where the "
            "agent can write) before where the command's program is now, so it may not be the program you allowed",
        )
    if rule is PermissionDecision.DENY or (rule is not None and (hook is None or rule is PermissionDecision.ALLOW)):
        return verdict(rule, f"{why}: {rule.value}")
    if hook is not None:  # allow
        return verdict(PermissionDecision.ALLOW, hook.reason or "allowed by a hook")
    if tool != SHELL or policy is None:
        return verdict(PermissionDecision.ALLOW, "allowed by default")
    if outside:
        justification = arguments.get("justification")
        said = f": {justification}" if isinstance(justification, str) and justification else ""
        return verdict(PermissionDecision.ASK, f"runs outside the sandbox{said}")
    if unusable:
        return verdict(
            PermissionDecision.ASK, f"the sandbox cannot start here ({sandbox.reason}), so it would run unsandboxed"
        )
    return verdict(PermissionDecision.ALLOW, "allowed inside the sandbox")


def _rule(tool: str, agent: AgentDefinition | None) -> tuple[PermissionDecision | None, str]:
    """The agent's rule for the tool (its exact name, else the longest matching glob), else its
    default, and what to call it in a reason."""
    rules = agent.permissions.tools or {} if agent and agent.permissions else {}
    rule = rules.get(tool)
    if rule is None:
        globs = sorted((p for p in rules if fnmatch.fnmatchcase(tool, p)), key=len, reverse=True)
        rule = rules[globs[0]] if globs else None
    if rule is None and agent and agent.permissions and agent.permissions.default is not None:
        return agent.permissions.default, "the agent's default"
    return rule, f"the agent's rule for {tool}"


def _named(path: str, real: str, context: ToolContext) -> str:
    """`path` as the model gave it, and where it leads when that is elsewhere (a link)."""
    spelled = os.path.normpath(os.path.join(context.directory, path))
    return path if spelled == real else f"{path} (a link to {real})"


def governing_write(tool: str, arguments: dict[str, Any], context: ToolContext) -> str | None:
    """The real path of what governs the agent that a file tool's call would write, if it does."""
    path = arguments.get("path")
    if tool not in WRITING_TOOLS or not isinstance(path, str) or "\0" in path:
        return None
    real = os.path.realpath(os.path.join(context.directory, path))
    return real if context.protected.governing_at(real) else None


@attrs.frozen
class HookPermission:
    """What the preToolUse hooks said: "ask" or "allow" (a deny never gets this far)."""

    decision: str
    reason: str | None = None


def remembers(rule: AlwaysAllowed, tool: str, command: str | None, outside: bool = False) -> bool:
    """Whether a remembered `allowAlways` covers this call: for the shell, the command it kept (see
    `remembered_commands`), and only a rule remembered outside the sandbox covers a command run
    outside it; for another tool, every call."""
    if rule.tool != tool or (outside and not rule.outside_sandbox):
        return False
    if tool != SHELL:
        return True
    return (
        rule.command_prefix is not None
        and command is not None
        and remembered_commands.covers(rule.command_prefix, command)
    )


def always_allowed(tool: str, arguments: dict[str, Any]) -> AlwaysAllowed:
    """What `allowAlways` remembers: the tool, and for the shell the command (its whole line, or a
    prefix known safe to extend: `git status -s` remembers `git status`) and whether it ran outside
    the sandbox."""
    if tool != SHELL:
        return AlwaysAllowed(tool=tool)
    command = arguments.get("command")
    kept = remembered_commands.remembered(command) if isinstance(command, str) else ""
    return AlwaysAllowed(tool=tool, command_prefix=kept, outside_sandbox=arguments.get("outside_sandbox") is True)
