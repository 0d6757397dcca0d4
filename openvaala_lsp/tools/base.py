"""The tool contract. Tools know nothing of turns, storage or JSON-RPC."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs

from openvaala_lsp.model import FileChange
from openvaala_lsp.tools.process import Started
from openvaala_lsp.tools.protected import Protected


@attrs.frozen(kw_only=True)
class SandboxPolicy:
    """Where a command may write (besides a private /tmp), which folders it sees even where they lie
    under /tmp (the workspace's), whether it may use the network, and what it may not see or change
    (`protected.py`): folders shown empty (the runtime's own), credentials shown empty, what governs
    the agent shown read-only, and the sockets outside the workspace it may still connect to."""

    writable: tuple[str, ...]
    visible: tuple[str, ...] = ()
    network: bool = False
    hidden: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    unix_sockets: tuple[str, ...] = ()


class Sandboxes(Protocol):
    """Where sandboxed commands start (`warm_sandbox.WarmSandboxes`)."""

    def launch(
        self, policy: SandboxPolicy, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int
    ) -> AbstractAsyncContextManager[Started]:
        """`process.Launch` in the sandbox `policy` asks for."""


@attrs.frozen(kw_only=True)
class OpenBuffer:
    """A file as an editor holds it open: its text there, saved or not."""

    text: str
    editor: str  # who holds it (the editor's clientName)
    version: int | None = None


def no_buffers(real: str) -> OpenBuffer | None:
    return None


@attrs.frozen(kw_only=True)
class EditorFiles:
    """The files of the editor that sent the conversation's latest input, read and written through it
    (its unsaved text, and edits it records): `read(real)` the file's text there, `write(real, text)`
    the file written by it; None where it offers not that. Either raises when the editor fails or does not answer."""

    editor: str  # who (the editor's clientName)
    read: Callable[[str], Awaitable[str]] | None = None
    write: Callable[[str, str], Awaitable[None]] | None = None


@attrs.define(kw_only=True)
class ToolContext:
    """Where and how a tool runs: the conversation's workspace directory (absolute, the cwd of
    commands), the roots a path may resolve into, the client's environment without its secrets, the
    sandbox commands run in (None: none), the warm sandboxes that start them (None: each starts its
    own), and what no tool may read or change unasked. Per call: whether git runs with the commands
    its configuration names turned off (the call ran on a remembered `allowAlways`, unseen by the
    user), and which file that governs the agent the user let it write."""

    directory: str
    roots: list[str]
    environment: Mapping[str, str]
    sandbox: SandboxPolicy | None = None
    warm: Sandboxes | None = None
    protected: Protected = attrs.Factory(Protected)
    guard_git: bool = False
    approved_write: str | None = None  # a real path
    # the text of a file (a real path) an editor holds open, which may differ from the disk's
    buffers: Callable[[str], OpenBuffer | None] = no_buffers
    # the editor of the conversation's latest input, when it reads and writes files for the file tools
    editor_files: EditorFiles | None = None
    # the tools run on another machine (an ssh executor), which says itself whether its sandbox starts
    remote: bool = False


@attrs.define(kw_only=True)
class ToolOutput:
    text: str  # what the model reads
    is_error: bool = False
    # what the call changed on disk, for people and editors (the model reads `text`, not the diffs)
    file_changes: list[FileChange] | None = None


DEFAULT_TIME_LIMIT = 120.0
"""Seconds a call may take, for a tool with no limit of its own (a file tool, a skill)."""

STOP_MARGIN = 30.0
"""Seconds a tool with a limit of its own may take past it (to stop what it started, to get a
sandbox) before the runtime stops it."""


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema, type object, explicit required

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        """Runs the tool. Bad arguments and failures are returned as `is_error` outputs, never
        raised. Cancellation (asyncio.CancelledError) stops it at once, killing any process group."""
        ...

    def time_limit(self, arguments: dict[str, Any]) -> float | None:
        """Seconds a call with these (unchecked) arguments may take before the runtime stops it and
        tells the model: past the tool's own limits, so that whatever becomes of its processes no call
        holds its turn for ever. None: no limit of the runtime's (a sub-agent, whose calls have theirs)."""
        ...
