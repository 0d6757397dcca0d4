"""An ACP editor made of the official TypeScript client (`@agentclientprotocol/sdk`'s
ClientSideConnection, run by node: acp_node/driver.mjs) spawning `openvaala-lsp --acp`, driven from
the tests line by line. The SDK is installed into acp_node/ with npm when it is missing."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).parent / "acp_node"
SDK = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
TIMEOUT = 20.0


def ensure_sdk() -> None:
    """npm ci from the lock file, once per checkout (what `.ci/run` on a fresh machine needs)."""
    if not SDK.is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=300)


class AcpError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.data = error.get("data") or {}


class NodeEditor:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.updates: list[dict[str, Any]] = []  # session/update params, in order
        self.permissions: list[dict[str, Any]] = []
        self.exit: int | None = None
        self._ids = itertools.count(1)
        self._answers: dict[int, asyncio.Future[Any]] = {}
        self._changed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, home: Path, workspace: Path, env: dict[str, str], args: list[str] | None = None) -> NodeEditor:
        await asyncio.to_thread(ensure_sdk)
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **env}
        process = await asyncio.create_subprocess_exec(
            "node", str(NODE_DIR / "driver.mjs"), sys.executable, "-m", "openvaala_lsp", "--acp", *(args or []),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=workspace, env=environment,
            limit=1 << 24,
        )  # fmt: skip
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            message = json.loads(line)
            if "update" in message:
                self.updates.append(message["update"])
            elif "permission" in message:
                self.permissions.append(message["permission"])
            elif "exit" in message:
                self.exit = message["exit"]
            elif (future := self._answers.pop(message["id"], None)) is not None and not future.done():
                if "error" in message:
                    future.set_exception(AcpError(message["error"]))
                else:
                    future.set_result(message["result"])
            self._changed.set()

    def send(self, op: str, params: Any = None) -> asyncio.Future[Any]:
        """Sends without waiting: the future of the answer."""
        assert self.process.stdin is not None
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[msg_id] = future
        self.process.stdin.write(json.dumps({"id": msg_id, "op": op, "params": params}).encode() + b"\n")
        return future

    async def call(self, op: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        return await asyncio.wait_for(self.send(op, params), timeout)

    def of(self, kind: str, session_id: str) -> list[dict[str, Any]]:
        return [
            u["update"] for u in self.updates if u["sessionId"] == session_id and u["update"]["sessionUpdate"] == kind
        ]

    def text(self, kind: str, session_id: str) -> str:
        return "".join(u["content"].get("text", "") for u in self.of(kind, session_id))

    async def wait(self, predicate: Any, timeout: float = TIMEOUT) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def close(self) -> None:
        """Ends the agent's stdin, as an editor that quits, and waits for both processes."""
        if self.process.returncode is None:
            try:
                await self.call("close")
                await self.wait(lambda: self.exit is not None)
            except (TimeoutError, ConnectionError):
                self.process.kill()
            assert self.process.stdin is not None
            self.process.stdin.close()
            await self.process.wait()
        self._reader.cancel()
