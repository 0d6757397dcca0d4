"""An `ssh` executor definition checked and made concrete: who to reach, how to prove who we are,
which host keys to trust, and the remote directories tools may use."""

from __future__ import annotations

import os
import posixpath
import re

import attrs

from openvaala_lsp.definitions import ExecutorDefinition

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


@attrs.frozen(kw_only=True)
class SshTarget:
    executor_id: str
    host: str
    port: int
    user: str
    key_file: str | None
    agent: bool
    known_hosts: str  # a path, `~` expanded
    accept_unknown_host_key: bool
    roots: tuple[str, ...]  # absolute, normalized
    environment: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def problems(definition: ExecutorDefinition) -> list[tuple[str, str]]:
    """(field, message) for each thing wrong with an `ssh` definition."""
    found: list[tuple[str, str]] = []
    if not definition.host:
        found.append(("host", "an ssh executor needs a host"))
    if not definition.user:
        found.append(("user", "an ssh executor needs a user"))
    if not 0 < definition.port < 65536:
        found.append(("port", f"expected a port 1-65535, got {definition.port}"))
    if not definition.key_file and not definition.agent:
        found.append(("keyFile", "an ssh executor needs a keyFile, or agent = true"))
    if not definition.roots:
        found.append(("roots", "an ssh executor needs its remote root directories (absolute paths)"))
    for root in definition.roots or ():
        if not root.startswith("/") or "\0" in root:
            found.append(("roots", f"expected an absolute path, got {root!r}"))
    for name in definition.environment or {}:
        if not ENV_NAME.fullmatch(name):
            found.append(("environment", f"not a variable name: {name!r}"))
    return found


def ssh_target(definition: ExecutorDefinition) -> SshTarget:
    """The target of a definition `problems` found nothing wrong with (ValueError otherwise)."""
    wrong = problems(definition)
    if wrong:
        raise ValueError(f"executor {definition.id}: " + "; ".join(f"{field}: {text}" for field, text in wrong))
    assert definition.host and definition.user and definition.roots
    return SshTarget(
        executor_id=definition.id,
        host=definition.host,
        port=definition.port,
        user=definition.user,
        key_file=os.path.expanduser(definition.key_file) if definition.key_file else None,
        agent=definition.agent,
        known_hosts=os.path.expanduser(definition.known_hosts or DEFAULT_KNOWN_HOSTS),
        accept_unknown_host_key=definition.accept_unknown_host_key,
        roots=tuple(dict.fromkeys(posixpath.normpath(root) for root in definition.roots)),
        environment=tuple(sorted((definition.environment or {}).items())),
    )


def executor_problems(executors: list[ExecutorDefinition]) -> list[str]:
    """What is wrong with executor definitions as `setDefinitions` gives them, one line each."""
    found: list[str] = []
    for i, executor in enumerate(executors):
        if executor.kind not in ("local", "ssh"):
            found.append(f"expected kind 'local' or 'ssh', got {executor.kind!r} @ $.executors[{i}].kind")
        elif executor.kind == "ssh":
            found += [f"{text} @ $.executors[{i}].{field}" for field, text in problems(executor)]
    return found
