"""The tool contract. Tools know nothing of turns, storage or JSON-RPC."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs


@attrs.frozen(kw_only=True)
class SandboxPolicy:
    """Where a command may write (besides a private /tmp), which folders it sees even where they lie
    under /tmp (the workspace's), and whether it may use the network."""

    writable: tuple[str, ...]
    visible: tuple[str, ...] = ()
    network: bool = False


@attrs.define(kw_only=True)
class ToolContext:
    """Where and how a tool runs: the conversation's workspace directory (absolute, the cwd of
    commands), the roots a path may resolve into, the client's environment, and the sandbox commands
    run in (None: none)."""

    directory: str
    roots: list[str]
    environment: Mapping[str, str]
    sandbox: SandboxPolicy | None = None


@attrs.define(kw_only=True)
class ToolOutput:
    text: str
    is_error: bool = False


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema, type object, explicit required

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        """Runs the tool. Bad arguments and failures are returned as `is_error` outputs, never
        raised. Cancellation (asyncio.CancelledError) stops it at once, killing any process group."""
        ...
