"""A spawned `openvaala-lsp` for end-to-end tests, spoken to with the package's own LSP client
(`openvaala_lsp.wire.client`): the frame reader and writer of the server, strict about what the server
sends (a frame that is not UTF-8 JSON of an object fails the test's waits).

Notifications are kept in arrival order; server->client requests are answered by `handlers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from openvaala_lsp.wire import client
from openvaala_lsp.wire.client import NULL, ResponseError, ServerBroke

__all__ = ["NULL", "TIMEOUT", "LspClient", "ResponseError", "ServerBroke", "running"]

TIMEOUT = 20.0


class LspClient(client.LspClient):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin)
        self.process = process

    @classmethod
    async def spawn(
        cls, home: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None, args: list[str] | None = None
    ) -> LspClient:
        # each test has its own home, so its own runtime host: let it exit soon after the test
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **(env or {})}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "openvaala_lsp",
            *(args or []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(cwd) if cwd else None,
            env=environment,
        )
        return cls(process)

    async def request(self, method: str, params: Any = None, *, timeout: float | None = TIMEOUT) -> Any:
        async with asyncio.timeout(timeout):
            return await super().request(method, params)

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = TIMEOUT) -> Any:
        async with asyncio.timeout(timeout):
            return await super().wait_for(predicate)

    async def response(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = TIMEOUT) -> Any:
        async with asyncio.timeout(timeout):
            return await super().response(predicate)

    async def call(self, name: str, params: Any = None, **kwargs: Any) -> Any:
        """`openvaala/<name>`."""
        return await self.request("openvaala/" + name, {} if params is None else params, **kwargs)

    async def initialize(  # type: ignore[override]
        self,
        folders: list[Path] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        root: Path | None = None,
    ) -> Any:
        params: dict[str, Any] = {
            "capabilities": capabilities or {},
            "initializationOptions": {"openvaala": options or {}},
        }
        if folders is not None:
            params["workspaceFolders"] = [{"uri": f.as_uri(), "name": f.name} for f in folders]
        if root is not None:
            params["rootUri"] = root.as_uri()
        async with asyncio.timeout(TIMEOUT):
            return await super().initialize(params)

    async def shutdown(self) -> int:  # type: ignore[override]
        """`shutdown` and `exit` as an editor leaves, then the process's exit code."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await super().shutdown()
        return await self.close()

    async def close(self) -> int:  # type: ignore[override]
        if self.process.stdin and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), 15)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()
        finally:
            self._reader_task.cancel()

    def kill(self) -> None:
        self.process.kill()


@contextlib.asynccontextmanager
async def running(home: Path, folder: Path, **kwargs: Any) -> AsyncIterator[LspClient]:
    spawned = await LspClient.spawn(home, cwd=folder, **kwargs)
    try:
        await spawned.initialize([folder])
        yield spawned
    finally:
        await spawned.shutdown()
