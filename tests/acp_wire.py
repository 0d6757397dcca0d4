"""A raw ACP wire client for the hostile-input and fuzz suites: `openvaala-lsp --acp` spawned, any
bytes written, every line it writes read strictly (each must be a JSON object; anything else fails the
waits). Blocking, a thread reading, so hypothesis can drive it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class AgentBroke(Exception):
    pass


class AcpWire:
    def __init__(self, home: Path, workspace: Path, *, args: list[str], env: dict[str, str] | None = None) -> None:
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openvaala_lsp", "--acp", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=workspace, env=environment,
        )  # fmt: skip
        self.messages: list[dict[str, Any]] = []
        self.broken: str | None = None
        self._changed = threading.Condition()
        self._ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            with self._changed:
                if not isinstance(message, dict):
                    self.broken = f"a line that is no JSON object: {line[:200]!r}"
                else:
                    self.messages.append(message)
                self._changed.notify_all()
        with self._changed:
            self.broken = self.broken or "the agent closed its output"
            self._changed.notify_all()

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message).encode() + b"\n")

    def answer(self, msg_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The response with that id (also id null: the first not yet taken)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.messages:
                    if "method" not in message and message.get("id") == msg_id and not message.get("_taken"):
                        message["_taken"] = True
                        return message
                if self.broken is not None:
                    raise AgentBroke(self.broken)
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"no answer to {msg_id!r}")

    def request(self, method: str, params: Any = None, timeout: float = 20.0) -> dict[str, Any]:
        self._ids += 1
        msg_id = f"ok-{self._ids}"
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.answer(msg_id, timeout)

    def errors(self) -> list[dict[str, Any]]:
        with self._changed:
            return [m["error"] for m in self.messages if "error" in m]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
