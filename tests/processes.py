"""Process checks shared by the tests."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether `pid` still runs. A zombie counts as gone: orphans are reaped by init, here PID 1 of
    the machine, which may take its time."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # the state follows the command name, which is in parentheses and may contain ") "
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def running_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (seen from outside any PID namespace)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


async def openvaala(home: Path, *args: str, wait: float, idle: float = 1.0) -> tuple[int, str, str]:
    """`openvaala ARGS` with its own OPENVAALA_HOME (a host it starts stops `idle` seconds after its
    last editor): exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "openvaala_lsp.cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "OPENVAALA_HOME": str(home), "OPENVAALA_HOST_IDLE_SECONDS": str(idle)},
    )
    out, err = await asyncio.wait_for(process.communicate(), wait)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
