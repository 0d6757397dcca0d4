"""Running a command as its own process group, reading its output without ever blocking it.

The child runs in a new session, so it and everything it starts (background jobs included) share
one process group that can be signalled as a whole. stdout and stderr go to one pipe that this
module owns, so output arrives in the order it was written and the pipe can be closed even when a
stray grandchild still holds its write end. Reading continues past the output cap (bytes are
counted and dropped) so a chatty child never stalls on a full pipe.

Stopping (timeout, cancellation, or background jobs still holding the output after the command
exited): SIGTERM to the group; up to `TERM_GRACE` seconds (`INTERRUPT_GRACE` when the caller was
cancelled: an interrupt) for the leader to exit, the pipe to close and (on Linux, read from /proc)
every member of the group to exit; then SIGKILL to the group, and up to `KILL_WAIT` seconds until
the leader's end is known and no member is left running. So a stop returns once the processes are
gone, not merely signalled, and always in bounded time: a process stuck in the kernel, or a sandbox
that no longer reports its command's end, does not hold the caller. Processes that left the group
(setsid, daemons) are out of reach: the usual limit without cgroups or a PID namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

import attrs

from openvaala_lsp.tools.sandbox_spawner import live_processes
from openvaala_lsp.tools.truncate import HeadTailBuffer

NO_PID = 0  # a started command whose pid is unknown (it ended with its sandbox): never signalled
TERM_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL."""

INTERRUPT_GRACE = 0.5
"""The same when the caller was cancelled: an interrupt must end its turn at once."""

KILL_WAIT = 2.0
"""Seconds to wait for killed processes to finish exiting (a process stuck in the kernel may not),
and for the leader's end to be known."""

EXIT_GRACE = 1.0
"""Seconds the output may stay open after the command exited (a background job holding it)."""


@attrs.define(kw_only=True)
class ProcessResult:
    output: HeadTailBuffer
    exit_code: int | None  # None if it never exited by itself (timed out), or its end is unknown
    timed_out: bool = False
    stopped_background: bool = False  # background jobs still holding the output were stopped


class PipeReader(asyncio.Protocol):
    """Feeds every chunk into the buffer and resolves `closed` at end of file."""

    def __init__(self, buffer: HeadTailBuffer, closed: asyncio.Future[None]) -> None:
        self._buffer = buffer
        self._closed = closed

    def data_received(self, data: bytes) -> None:
        self._buffer.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


def _signal_group(pgid: int, signum: int) -> None:
    # ProcessLookupError: the group is already empty. PermissionError: only possible if the pgid
    # was recycled by someone else's process, which must not be touched anyway.
    if pgid <= 1:  # NO_PID (killpg(0) is our own group), or init
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_has_live_members(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (zombies awaiting their reaper do not
    count). Linux only: elsewhere, without /proc, this says False and the caller relies on the
    leader's exit and the pipe closing instead."""
    return pgid > 1 and any(group == pgid for _, group in live_processes())


async def _group_gone(pgid: int) -> None:
    # Polled: the exit of a process that is not our child raises no event we could wait for.
    while True:
        if not await asyncio.to_thread(_group_has_live_members, pgid):
            return
        await asyncio.sleep(0.02)


async def await_group(
    process: Started, closed: asyncio.Future[None], time_limit: float
) -> tuple[int | None, bool, bool]:
    """Waits up to `time_limit` for the command to exit and its output to close. On timeout the whole
    group is stopped; background jobs still holding the output `EXIT_GRACE` after the exit are
    stopped too. Returns (exit code, timed out, stopped background jobs)."""
    exit_code: int | None = None
    timed_out = stopped_background = False
    try:
        exit_code = await asyncio.wait_for(process.wait(), time_limit)
    except TimeoutError:
        timed_out = True
        await stop_group(process, closed)
    else:
        try:
            await asyncio.wait_for(asyncio.shield(closed), EXIT_GRACE)
        except TimeoutError:
            stopped_background = True
            await stop_group(process, closed)
    # After SIGKILL the pipe closes at once unless a process outside the group holds it.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(closed), EXIT_GRACE)
    return exit_code, timed_out, stopped_background


async def stop_group(process: Started, closed: asyncio.Future[None], grace: float = TERM_GRACE) -> None:
    pgid = process.pid  # a session leader's pid is its group id
    _signal_group(pgid, signal.SIGTERM)
    try:
        # Polite first: give the group a moment to exit and let go of the pipe.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(process.wait(), asyncio.shield(closed), _group_gone(pgid)), grace)
    finally:
        # Runs even when this wait is itself cancelled, so nothing survives a second interrupt.
        _signal_group(pgid, signal.SIGKILL)
    # SIGKILL is delivered at once but a process takes a moment to finish exiting; when this
    # returns the whole group is gone, not just signalled. Bounded: a process stuck in the kernel
    # never ends, and a sandbox that stopped answering reports no end.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(process.wait(), _group_gone(pgid)), KILL_WAIT)


class Started(Protocol):
    """A started command as this module follows it: its group (the leader's pid, as this process
    sees it, or `NO_PID`) is signalled from here; its end is reported by whoever started it."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int | None:
        """Its exit code once it ended; None if how it ended is unknown (its sandbox was lost)."""


class Launch(Protocol):
    """Starts `argv` in a session of its own, stdin /dev/null, stdout and stderr to `output`; OSError
    if it cannot. The context ends once the command and its output are done with."""

    def __call__(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int
    ) -> contextlib.AbstractAsyncContextManager[Started]: ...


@contextlib.asynccontextmanager
async def start_process(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int, pass_fds: Sequence[int] = ()
) -> AsyncIterator[Started]:
    """`Launch` as a child of this process (which also inherits `pass_fds`)."""
    yield await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=output,
        stderr=output,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )


async def run_process_group(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    time_limit: float,
    read_limit: int,
    launch: Launch = start_process,
) -> ProcessResult:
    """Runs `argv` with stdin from /dev/null and a merged stdout/stderr; OSError if it cannot start."""
    buffer = HeadTailBuffer(limit=read_limit)
    read_fd, write_fd = os.pipe()
    try:
        starting = launch(argv, cwd=cwd, env=env, output=write_fd)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    reading = False
    try:
        async with starting as process:
            # the child has its own copy; ours would keep the pipe open forever
            os.close(write_fd)
            write_fd = -1
            reading = True
            return await _follow(process, read_fd, buffer, time_limit)
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        if not reading:
            os.close(read_fd)


async def _follow(process: Started, read_fd: int, buffer: HeadTailBuffer, time_limit: float) -> ProcessResult:
    """Reads the command's output (the pipe's read end is this function's to close) until it ends."""
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()
    pipe = os.fdopen(read_fd, "rb", buffering=0)  # the transport owns it and closes it
    transport: asyncio.BaseTransport | None = None
    result = ProcessResult(output=buffer, exit_code=None)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: PipeReader(buffer, closed), pipe)
        result.exit_code, result.timed_out, result.stopped_background = await await_group(process, closed, time_limit)
    except asyncio.CancelledError:
        if transport is None:
            pipe.close()
            closed.set_result(None)  # nothing reads it, so nothing to wait for
        # An interrupt ends everything the command started, detached output or not, and soon.
        await stop_group(process, closed, INTERRUPT_GRACE)
        raise
    finally:
        if transport is not None:
            transport.close()
    return result
