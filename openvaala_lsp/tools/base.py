"""The tool contract. Tools know nothing of turns, storage or JSON-RPC."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs

from openvaala_lsp.fieldrepr import FieldRepr
from openvaala_lsp.tools.process import Started


@attrs.frozen(kw_only=True)
class SandboxPolicy(FieldRepr):
    """Where a command may write (besides a private /tmp), which folders it sees even where they lie
    under /tmp (the workspace's), and whether it may use the network."""

    writable: tuple[str, ...]
    visible: tuple[str, ...] = ()
    network: bool = False


class Sandboxes(Protocol):
    """Where sandboxed commands start (`warm_sandbox.WarmSandboxes`)."""

    def launch(
        self, policy: SandboxPolicy, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int
    ) -> AbstractAsyncContextManager[Started]:
        """`process.Launch` in the sandbox `policy` asks for."""


@attrs.define(kw_only=True)
class ToolContext(FieldRepr):
    """Where and how a tool runs: the conversation's workspace directory (absolute, the cwd of
    commands), the roots a path may resolve into, the client's environment, the sandbox commands
    run in (None: none), and the warm sandboxes that start them (None: each starts its own)."""

    directory: str
    roots: list[str]
    environment: Mapping[str, str]
    sandbox: SandboxPolicy | None = None
    warm: Sandboxes | None = None


@attrs.define(kw_only=True)
class ToolOutput(FieldRepr):
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
