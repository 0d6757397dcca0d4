"""Readable one-line descriptions of why a server could not start or a call failed."""

from __future__ import annotations

import asyncio
import errno


class ServerExited(Exception):
    """The server process closed its output: it exited or crashed."""


class StartupTimeout(Exception):
    """The server did not finish its handshake and tool listing in time."""


class BadDefinition(Exception):
    """The definition cannot work (no command, no url, an unknown transport)."""


def leaf(error: BaseException) -> BaseException:
    """The first interesting exception inside (nested) exception groups: task groups wrap what
    the transport raised, and the caller wants the cause, not the wrapper."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = next((e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)), error.exceptions[0])
    return error


def describe(error: BaseException, *, command: str | None = None, cwd: str | None = None) -> str:
    error = leaf(error)
    if isinstance(error, OSError) and error.errno in (errno.ENOENT, errno.ENOTDIR):
        if cwd is not None and error.filename == cwd:
            return f"working directory {cwd!r} does not exist"
        return f"command not found: {command or error.filename}"
    if isinstance(error, PermissionError):
        return f"cannot run {command or error.filename!r}: permission denied"
    text = str(error).strip()
    name = type(error).__name__
    if isinstance(error, ServerExited | StartupTimeout | BadDefinition):
        return text
    return f"{name}: {text}" if text else name
