"""The tool gap of a shell call over ssh against a local one: the time `tool.run` takes for `true`
(and read_file of a small file), locally (no sandbox; a warm sandbox) and on an ssh executor whose
host is this machine, reached through a real sshd on a loopback port (`tests/sshd.py`): the first
call (which connects), then calls on the pooled connection, without and with the host's bwrap, and
the floor under them: a bare exec request, which sshd runs through the user's login shell (bash
reads ~/.bashrc when sshd starts it, so what that file does is paid by every call). Medians of many
runs over loopback: the runtime's and sshd's cost, not a network's.

    python bench/ssh_tool_gap.py [--runs N]

Not a test: nothing here asserts."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sshd import Sshd

from openvaala_lsp.definitions import ExecutorDefinition
from openvaala_lsp.executors.ssh import SshExecutor
from openvaala_lsp.executors.ssh_target import ssh_target
from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import SandboxPolicy, Tool, ToolContext
from openvaala_lsp.tools.registry import local_tool
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes


async def median_ms(runs: int, call: Callable[[], Awaitable[Any]]) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def by_name(tools: list[Tool], name: str) -> Tool:
    return next(tool for tool in tools if tool.name == name)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    print(f"{os.cpu_count()} cores; {runs} runs each; local sandbox: {sandbox.state().reason}")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        root, server = prepare(folder)
        warm = WarmSandboxes()
        try:
            policy = SandboxPolicy(writable=(root,), visible=(root,))
            plain = ToolContext(directory=root, roots=[root], environment=dict(os.environ))
            warmed = ToolContext(directory=root, roots=[root], environment=dict(os.environ), sandbox=policy, warm=warm)
            shell, read = local_tool("shell"), local_tool("read_file")
            assert shell is not None and read is not None
            true, small = {"command": "true"}, {"path": "small.txt"}
            for _ in range(20):  # until a warm sandbox runs the commands
                await shell.run(true, warmed)
            local = await median_ms(runs, lambda: shell.run(true, plain))
            local_warm = await median_ms(runs, lambda: shell.run(true, warmed))
            local_read = await median_ms(runs, lambda: read.run(small, plain))

            bwrap = sandbox.state().binary
            path = f"{os.path.dirname(bwrap)}:/usr/bin:/bin" if bwrap else "/usr/bin:/bin"
            definition = ExecutorDefinition(
                **{**_wire_to_fields(server.definition("bench", [root])), "environment": {"PATH": path}}
            )
            executor = SshExecutor(ssh_target(definition))
            tools = executor.tools()
            remote_shell, remote_read = by_name(tools, "shell"), by_name(tools, "read_file")
            start = time.perf_counter()
            first = await remote_shell.run(true, plain)
            connect = (time.perf_counter() - start) * 1000
            remote = await median_ms(runs, lambda: remote_shell.run(true, plain))
            boxed = ToolContext(directory=root, roots=[root], environment={}, sandbox=policy)
            said = (await remote_shell.run(true, boxed)).text
            remote_boxed = await median_ms(runs, lambda: remote_shell.run(true, boxed))
            remote_read_ms = await median_ms(runs, lambda: remote_read.run(small, plain))
            connection = await executor.link.connection()  # the floor: sshd and the user's login shell
            floor = await median_ms(runs, lambda: connection.run("true", check=True))
            await executor.close()
        finally:
            await warm.close()
            server.kill()
    assert "exit code 0" in first.text, first.text
    print(f"shell `true`, local, no sandbox:         {local:7.2f} ms")
    print(f"shell `true`, local, warm sandbox:       {local_warm:7.2f} ms")
    print(f"shell `true`, ssh, first call (connect): {connect:7.2f} ms")
    print(f"shell `true`, ssh, pooled, no sandbox:   {remote:7.2f} ms (+{remote - local:.2f} ms over local)")
    print(f"a bare exec request `true` on that connection (sshd, the login shell and its rc files): {floor:.2f} ms")
    sandboxed = "without" if "ran without a sandbox" in said else "in"
    print(f"shell `true`, ssh, pooled, {sandboxed} bwrap:   {remote_boxed:7.2f} ms")
    print(f"read_file 100 lines, local:              {local_read:7.2f} ms")
    print(f"read_file 100 lines, ssh (SFTP):         {remote_read_ms:7.2f} ms (+{remote_read_ms - local_read:.2f} ms)")


def prepare(folder: str) -> tuple[str, Sshd]:
    """The remote root with a small file, and a running sshd."""
    root = str(Path(folder, "root").resolve())
    os.mkdir(root)
    Path(root, "small.txt").write_text("".join(f"line {n}\n" for n in range(100)))
    server = Sshd(Path(folder, "sshd"))
    server.start()
    return root, server


def _wire_to_fields(wire: dict[str, Any]) -> dict[str, Any]:
    """`Sshd.definition`'s wire names as ExecutorDefinition's fields."""
    names = {"keyFile": "key_file", "knownHosts": "known_hosts"}
    return {names.get(key, key): value for key, value in wire.items()}


if __name__ == "__main__":
    asyncio.run(main())
