"""What the hardened sandbox costs a command, against the sandbox before it (bubblewrap with a mount
and PID namespace only): a sandbox of its own per command (the first of a kind, or every command
where warm sandboxes cannot start), the plan computed before each command (masks, sockets), and a
command in a warm sandbox. Medians of many runs, on this machine.

    python bench/sandbox_cost.py [--runs N]

Not a test: nothing here asserts. The whole tool gap, over the wire and beside Codex, is bench/run.py's
and bench/peers.py's."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sandbox_helpers import context_for, sandboxed

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(argv: list[str], pass_fds: tuple[int, ...] = ()) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, pass_fds=pass_fds, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def before(workspace: str) -> list[str]:
    """The command line of the sandbox before the hardening (37f36bc's `sandbox.mounts`)."""
    binary = sandbox.state().binary or "bwrap"
    return [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", workspace, workspace, "--unshare-net", "--unshare-pid", "--die-with-parent"]  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    state = sandbox.state()
    print(f"sandbox: {state.reason}; {os.cpu_count()} cores; {runs} runs each")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
        workspace = Path(folder)
        context = context_for(workspace)
        assert context.sandbox is not None
        old = [*before(folder), "--chdir", folder, "--", "/bin/true"]
        olds, news = [], []
        for _ in range(runs):  # alternating, so that the machine's drift reaches both alike
            olds.append(timed(old))
            with sandbox.filter_fds() as (fds, filter_args):
                new = sandbox.wrap(["/bin/true"], context.sandbox, folder, filter_args)
                news.append(timed(new, fds))
        print(f"a sandbox of its own, `true`: before {median_ms(olds):.2f} ms, now {median_ms(news):.2f} ms "
              f"(+{median_ms(news) - median_ms(olds):.2f} ms)")  # fmt: skip
        plans = []
        for _ in range(runs * 10):
            start = time.perf_counter()
            sandbox.plan(context.sandbox, folder)
            plans.append(time.perf_counter() - start)
        print(f"the plan before each command (masks, sockets, protected paths): {median_ms(plans) * 1000:.0f} µs")
        warm = WarmSandboxes()
        try:
            warm_context = context_for(workspace, warm=warm)
            for _ in range(200):  # until a warm sandbox runs the commands
                if not (await sandboxed("echo $PPID", warm_context)).startswith("1\n"):
                    break
            commands = []
            for _ in range(runs):
                start = time.perf_counter()
                await sandboxed("true", warm_context)
                commands.append(time.perf_counter() - start)
            print(f"a command in a warm sandbox, `true` through the shell tool: {median_ms(commands):.2f} ms")
        finally:
            await warm.close()


if __name__ == "__main__":
    asyncio.run(main())
