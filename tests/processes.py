"""Process checks shared by the tests."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Whether `pid` still runs. A zombie counts as gone: orphans are reaped by init, here PID 1 of
    the machine, which may take its time."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # the state follows the command name, which is in parentheses and may contain ") "
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
