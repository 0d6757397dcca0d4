"""Process checks shared by the tests."""

from __future__ import annotations

import os


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
