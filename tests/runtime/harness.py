"""The runtime in the test's own process, driven the way an editor drives it: wire JSON in, wire JSON
out, through the same dispatch and notification code as the pygls connection (server/dispatch.py),
with real DuckDB (a file under the test's home) and, where a test wants one, the scripted model
server on 127.0.0.1. No process, no framing: a whole turn takes a fraction of a second.

`Harness` speaks like `lsp_client.LspClient` (`call`, `request`, `notifications`, `of`,
`wait_for`), so a test reads the same either way; errors are `ResponseError` with `code`, `kind`,
`message` and `data`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol.methods import PREFIX, REQUESTS
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.server.dispatch import closed_notification, dispatch, notifications
from openvaala_lsp.server.protocol import WireError
from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.wire.client import NotificationLog

ResponseError = WireError
_clients = itertools.count(1)
TIMEOUT = 20.0

ClientTool = Callable[[str, str, str, dict[str, Any]], Any]


def wire(value: Any) -> Any:
    """The value as an editor receives it: through JSON (enums become strings, tuples lists)."""
    return json.loads(json.dumps(value))


class Harness(NotificationLog):
    """One client (an editor connection) of a runtime; `connect` adds another to the same runtime."""

    def __init__(
        self,
        runtime: Runtime,
        folders: list[Path],
        environment: Mapping[str, str],
        *,
        call_tool: ClientTool | None = None,
        approvals: bool = False,
        name: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.folders = folders
        self.notifications: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._pumps: set[asyncio.Task[None]] = set()

        async def workspace_folders() -> list[WorkspaceFolder]:
            return [WorkspaceFolder(name=folder.name, path=str(folder)) for folder in self.folders]

        self.client = Client(
            client_id=f"harness-{next(_clients)}",
            environment=dict(environment),
            workspace_folders=workspace_folders,
            attach=self._attach,
            call_tool=call_tool,
            approvals=approvals,  # initializationOptions.openvaala.approvals
            name=name,  # initializationOptions.openvaala.clientName
        )
        runtime.connect(self.client)

    @classmethod
    async def start(
        cls,
        home: Path,
        folders: list[Path],
        *,
        env: Mapping[str, str] | None = None,
        storage: DuckDBStorage | None = None,
        approvals: bool = False,
        **options: Any,
    ) -> Harness:
        """A runtime over `home` (its database, and its user configuration unless a test gives
        definitions with setDefinitions), with one client whose workspace is `folders`."""
        storage = storage or await DuckDBStorage.open(str(home / "openvaala.duckdb"))
        options.setdefault("watch_interval", 0.1)
        runtime = await Runtime.start(storage, config_dir=home, **options)
        return cls(runtime, folders, {**os.environ, **(env or {})}, approvals=approvals)

    def connect(
        self, folders: list[Path] | None = None, env: Mapping[str, str] | None = None, **kwargs: Any
    ) -> Harness:
        """Another client of the same runtime (a second editor)."""
        return Harness(self.runtime, folders or self.folders, {**os.environ, **(env or {})}, **kwargs)

    # Requests

    async def request(self, method: str, params: Any = None, *, timeout: float = TIMEOUT) -> Any:
        spec = REQUESTS.get(method)
        if spec is None or not hasattr(self.runtime, spec.runtime):
            raise WireError(-32601, f"Method Not Found: {method}", {"kind": "methodNotFound"})
        return wire(await asyncio.wait_for(dispatch(self.runtime, self.client, spec, params), timeout))

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = TIMEOUT) -> Any:
        async with asyncio.timeout(timeout):
            return await super().wait_for(predicate)

    async def call(self, name: str, params: Any = None, **kwargs: Any) -> Any:
        """`openvaala/<name>`."""
        return await self.request(PREFIX + name, {} if params is None else params, **kwargs)

    # Notifications

    def _attach(self, sub: Subscription) -> None:
        pump = asyncio.get_running_loop().create_task(self._pump(sub))
        self._pumps.add(pump)
        pump.add_done_callback(self._pumps.discard)

    async def _pump(self, sub: Subscription) -> None:
        seq = 0
        while batch := await sub.next_batch(512):
            for method, params in notifications(sub, seq, batch):
                seq = params["seq"]
                await self._note({"jsonrpc": "2.0", "method": method, "params": wire(params)})
        method, params = closed_notification(sub)
        await self._note({"jsonrpc": "2.0", "method": method, "params": params})

    async def _note(self, message: dict[str, Any]) -> None:
        async with self._changed:
            self.notifications.append(message)
            self._changed.notify_all()

    # Ending

    def disconnect(self) -> None:
        """The editor went away."""
        self.runtime.disconnect(self.client)

    async def stop(self) -> None:
        """Stops the runtime (every client's), then this client's pumps."""
        await self.runtime.stop()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
