"""What the runtime knows of a connected client (an editor connection): no JSON-RPC here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs

from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.runtime.subscriptions import DEFAULT_CAPACITY, Subscription
from openvaala_lsp.tools.base import OpenBuffer


@attrs.define(kw_only=True, eq=False)
class Client:
    """A connection's identity, environment and workspace folders, and where its subscriptions go.

    `workspace_folders` is asked at each use so folder changes apply at once. `attach` hands a new
    subscription to the transport, which drains it.
    """

    client_id: str
    name: str | None = None  # clientName: how the runtime names it where it says who did something
    approvals: bool = False  # it declared it can answer approvalRequested
    environment: Mapping[str, str]
    workspace_folders: Callable[[], Awaitable[list[WorkspaceFolder]]]
    attach: Callable[[Subscription], None]
    # runs a tool of one of this client's MCP servers: (conversation id, server, tool, arguments) -> result
    call_tool: Callable[[str, str, str, dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    # the text of a file (a real path) this client holds open, saved or not; None: it holds none
    open_buffer: Callable[[str], OpenBuffer | None] | None = None
    # the file tools' reads and writes through this client (it declared readTextFile / writeTextFile):
    # (conversation id, real path) -> the text it holds; (conversation id, real path, text) -> written
    read_text: Callable[[str, str], Awaitable[str]] | None = None
    write_text: Callable[[str, str, str], Awaitable[None]] | None = None
    subscriptions: dict[str, Subscription] = attrs.Factory(dict)
    # events a subscription may hold for this client before it is closed as too slow
    max_buffered_events: int = DEFAULT_CAPACITY


def parse_environment(entries: Iterable[str]) -> dict[str, str]:
    """`["KEY=VALUE", ...]` (already validated by the params type) as a mapping."""
    return dict(entry.split("=", 1) for entry in entries)


def format_environment(environment: dict[str, str]) -> list[str]:
    return [f"{key}={value}" for key, value in sorted(environment.items())]


def environment_of(client: Client, entries: list[str] | None) -> dict[str, str]:
    """The given environment, else the client's."""
    return parse_environment(entries) if entries is not None else dict(client.environment)
