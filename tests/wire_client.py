"""A blocking client of the real `openvaala-lsp` for the fuzz suite: it writes any bytes at all and
reads the server's frames strictly (a frame that is not valid UTF-8 JSON, or holds NaN, fails the
run), in a thread, so property-based tests can drive the process without an event loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ServerBroke(AssertionError):
    """The server wrote something that is not a valid LSP frame of JSON, or stopped."""


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class WireClient:
    def __init__(self, home: Path, workspace: Path, *, args: list[str], env: dict[str, str]) -> None:
        environment = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "1", **env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openvaala_lsp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=workspace,
            env=environment,
        )
        self.messages: list[dict[str, Any]] = []  # everything the server sent, in order
        self.broken: str | None = None
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # writing

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send_body(self, body: bytes) -> None:
        self.send_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

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
        with self._changed:
            found = self._changed.wait_for(
                lambda: self.broken is not None or any(predicate(m) for m in self.messages), timeout
            )
            if self.broken is not None:
                raise ServerBroke(self.broken)
            if not found:
                raise TimeoutError(f"no matching message within {timeout} s")
            return next(m for m in self.messages if predicate(m))

    def wait_response(self, msg_id: Any, *, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout=timeout)

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while (line := stdout.readline()) != b"\r\n":
                    if not line:
                        raise ServerBroke(f"the server closed its output (exit code {self.process.poll()})")
                    name, _, value = line.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                if length is None:
                    raise ServerBroke("a frame without Content-Length")
                body = stdout.read(length)
                message = json.loads(body.decode("utf-8"), parse_constant=_not_json)
                if not isinstance(message, dict):
                    raise ServerBroke(f"a message that is not an object: {body[:200]!r}")
                with self._changed:
                    self.messages.append(message)
                    self._changed.notify_all()
        except Exception as exc:
            with self._changed:
                self.broken = f"{type(exc).__name__}: {exc}"
                self._changed.notify_all()

    def close(self) -> int:
        try:
            self.request("shutdown", "shutdown", timeout=10)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            assert self.process.stdin is not None
            self.process.stdin.close()
            return self.process.wait(15)
        except Exception:
            self.process.kill()
            return self.process.wait()
