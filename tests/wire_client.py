"""A blocking facade over the package's LSP client (`openvaala_lsp.wire.client`) for the fuzz suite: a
thread runs its event loop, so property-based tests drive the real `openvaala-lsp` without one. It
writes any bytes at all; the client reads the server's frames strictly (a frame that is not valid
UTF-8 JSON of an object, or holds NaN, fails every wait with `ServerBroke`)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from openvaala_lsp.wire.client import LspClient, ServerBroke

__all__ = ["ServerBroke", "WireClient"]

T = TypeVar("T")


class Process:
    """The server process as `subprocess.Popen` shows it to the suite."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    def poll(self) -> int | None:
        return self._process.returncode


class WireClient:
    def __init__(self, home: Path, workspace: Path, *, args: list[str], env: dict[str, str]) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **env}
        self._process, self.client = self._run(self._spawn(args, workspace, environment))
        self.process = Process(self._process)

    async def _spawn(
        self, args: list[str], workspace: Path, environment: dict[str, str]
    ) -> tuple[asyncio.subprocess.Process, LspClient]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "openvaala_lsp", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=workspace, env=environment,
        )  # fmt: skip
        assert process.stdout is not None and process.stdin is not None
        return process, LspClient(process.stdout, process.stdin)

    def _run(self, work: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Everything the server sent, in order."""
        return self.client.messages

    # writing

    def send_bytes(self, data: bytes) -> None:
        self._run(self.client.send_bytes(data))

    def send_body(self, body: bytes) -> None:
        self._run(self.client.send_raw(body))

    def send(self, message: Any) -> None:
        self.send_body(json.dumps(message).encode())

    def request(self, msg_id: str, method: str, params: Any = None, *, timeout: float = 20.0) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.wait_response(msg_id, timeout=timeout)

    # reading

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float) -> dict[str, Any]:
        return self._run(self.client._first(self.client.messages, predicate), timeout)

    def wait_response(self, msg_id: Any, *, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout=timeout)

    def close(self) -> int:
        try:
            self.request("shutdown", "shutdown", timeout=10)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            assert self._process.stdin is not None
            self._process.stdin.close()
            return self._run(asyncio.wait_for(self._process.wait(), 15))
        except Exception:
            self._process.kill()
            return self._run(self._process.wait())
        finally:
            self._run(self.client.close())
            self.loop.call_soon_threadsafe(self.loop.stop)
