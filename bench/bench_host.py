"""Runtime host benchmark: how fast an editor gets its `initialize` answer, and what memory costs.

- spawn -> `initialize` result: warm (a host runs; median of 10), cold (the front starts the host;
  median of 5, each in a fresh OPENVAALA_HOME) and `--standalone` (runtime in the spawned process).
- memory: RSS and PSS of one front, of the host with 1, 3 and 10 editors connected, and of one
  standalone process; the cost per editor window is (host + fronts) / editors.

The editor is imitated the way VS Code spawns servers: one socketpair for the child's stdin and
another for its stdout (libuv never shares one socket between both).
Reference points (Codex app-server, as given in the issue): ~58 ms to the first answer,
about 87 MiB per window.

    /work/venv/bin/python bench/bench_host.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from openvaala_lsp.rundir import run_dir

CODEX_FIRST_ANSWER_MS = 58.0
CODEX_WINDOW_MIB = 87.0


class Editor:
    """One spawned `openvaala-lsp` behind a socketpair, answering like a minimal LSP client."""

    def __init__(self, home: Path, workspace: Path, args: tuple[str, ...] = ()) -> None:
        to_child, child_in = socket.socketpair()
        from_child, child_out = socket.socketpair()
        env = {**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": "600"}
        env.pop("OPENVAALA_STANDALONE", None)
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openvaala_lsp", *args], stdin=child_in, stdout=child_out, cwd=workspace, env=env
        )
        child_in.close()
        child_out.close()
        self.stdin = to_child
        self.stdout = from_child
        self.buffer = b""
        self.ids = 0

    def request(self, method: str, params: Any) -> Any:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.ids and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.stdin.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def receive(self) -> dict[str, Any]:
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                fields = dict(line.split(b":", 1) for line in head.split(b"\r\n"))
                length = int({k.strip().lower(): v for k, v in fields.items()}[b"content-length"])
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    message: dict[str, Any] = json.loads(rest[:length])
                    return message
            chunk = self.stdout.recv(65536)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            self.buffer += chunk

    def initialize(self, workspace: Path) -> float:
        """Milliseconds from spawn to the initialize result."""
        params = {
            "processId": os.getpid(),
            "capabilities": {},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": "w"}],
        }
        self.request("initialize", params)
        elapsed = (time.perf_counter() - self.started) * 1000
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return elapsed

    def close(self) -> None:
        self.request("shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.process.wait(15)
        self.stdin.close()
        self.stdout.close()


def memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) / 1024
    return fields["Rss"], fields["Pss"]


def host_pid(home: Path) -> int:
    return int(Path(run_dir({"OPENVAALA_HOME": str(home)}).pid_file).read_text())


def stop_host(home: Path) -> None:
    pid = host_pid(home)
    os.kill(pid, signal.SIGTERM)
    while Path(f"/proc/{pid}").exists() and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text():
        time.sleep(0.02)


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.1f} ms  (min {min(samples):.1f}, max {max(samples):.1f}, n={len(samples)})"


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="openvaala-bench-"))
    workspace = root / "project"
    workspace.mkdir()
    try:
        cold = []
        for run in range(5):
            home = root / f"cold-{run}"
            editor = Editor(home, workspace)
            cold.append(editor.initialize(workspace))
            editor.close()
            stop_host(home)

        home = root / "home"
        first = Editor(home, workspace)
        first.initialize(workspace)
        first.request("openvaala/createConversation", {})
        warm = []
        for _ in range(10):
            editor = Editor(home, workspace)
            warm.append(editor.initialize(workspace))
            editor.close()

        standalone = []
        for run in range(10):
            editor = Editor(root / f"standalone-{run}", workspace, ("--standalone",))
            standalone.append(editor.initialize(workspace))
            if run == 0:
                editor.request("openvaala/listConversations", {})
                standalone_memory = memory_mib(editor.process.pid)
            editor.close()

        editors = [first]
        host_memory = {}
        for count in (1, 3, 10):
            while len(editors) < count:
                editor = Editor(home, workspace)
                editor.initialize(workspace)
                editor.request("openvaala/listConversations", {})
                editors.append(editor)
            host_memory[count] = memory_mib(host_pid(home))
        front_memory = memory_mib(first.process.pid)
        for editor in editors:
            editor.close()
        stop_host(home)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    warm_ms = statistics.median(warm)
    print("spawn -> initialize result")
    print(f"  warm (host running)      {median_ms(warm)}")
    print(f"  cold (front starts host) {median_ms(cold)}")
    print(f"  --standalone             {median_ms(standalone)}")
    print(f"  warm / Codex {CODEX_FIRST_ANSWER_MS:.0f} ms       {warm_ms / CODEX_FIRST_ANSWER_MS:7.2f}x")
    print(f"  warm / standalone        {warm_ms / statistics.median(standalone):7.2f}x")
    print("memory (MiB)                      RSS      PSS")
    print(f"  one front                   {front_memory[0]:7.1f}  {front_memory[1]:7.1f}")
    for count, (rss, pss) in host_memory.items():
        print(f"  host, {count:2d} editors            {rss:7.1f}  {pss:7.1f}")
    print(f"  one --standalone process    {standalone_memory[0]:7.1f}  {standalone_memory[1]:7.1f}")
    print("per editor window (host + fronts) / editors, RSS")
    for count, (rss, _) in host_memory.items():
        per_window = (rss + count * front_memory[0]) / count
        ratio = per_window / CODEX_WINDOW_MIB
        print(f"  {count:2d} editors  {per_window:7.1f} MiB   {ratio:5.2f}x Codex ({CODEX_WINDOW_MIB:.0f} MiB)")


if __name__ == "__main__":
    main()
