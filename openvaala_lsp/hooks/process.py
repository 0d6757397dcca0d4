"""Running one hook command: JSON on stdin, stdout and stderr kept apart, in its own process group.

The shell tool's runner (`openvaala_lsp.tools.process`) merges stdout into stderr and reads no
stdin, so this variant owns three pipes instead, and reuses that module's pipe reader and its
group stop (SIGTERM, a grace period, SIGKILL, a bounded wait until the group is gone). All pipes
are ours, not asyncio's: asyncio's `Process.wait()` would otherwise not return while a background
grandchild still holds one of them.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Mapping, Sequence

import attrs

from openvaala_lsp.tools.process import INTERRUPT_GRACE, PipeReader, await_group, stop_group
from openvaala_lsp.tools.truncate import HeadTailBuffer


@attrs.define(kw_only=True)
class HookProcessResult:
    stdout: HeadTailBuffer
    stderr: HeadTailBuffer
    exit_code: int | None  # None if it never exited by itself (timed out)
    timed_out: bool = False


def _pipes(count: int) -> list[int]:
    fds: list[int] = []
    try:
        for _ in range(count):
            fds.extend(os.pipe())
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _all_done(loop: asyncio.AbstractEventLoop, futures: Sequence[asyncio.Future[None]]) -> asyncio.Future[None]:
    combined: asyncio.Future[None] = loop.create_future()

    def settle(_: object) -> None:
        if not combined.done() and all(future.done() for future in futures):
            combined.set_result(None)

    for future in futures:
        future.add_done_callback(settle)
    return combined


async def run_hook_process(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: str,
    env: Mapping[str, str],
    time_limit: float,
    read_limit: int,
) -> HookProcessResult:
    """Runs `argv` to its end or until `time_limit` seconds pass; OSError if it cannot start.
    Cancelling this stops the whole process group before the cancellation propagates."""
    loop = asyncio.get_running_loop()
    result = HookProcessResult(stdout=HeadTailBuffer(read_limit), stderr=HeadTailBuffer(read_limit), exit_code=None)
    in_read, in_write, out_read, out_write, err_read, err_write = _pipes(3)
    child_ends = [in_read, out_write, err_write]
    output_pipes = [os.fdopen(out_read, "rb", buffering=0), os.fdopen(err_read, "rb", buffering=0)]
    input_pipe = os.fdopen(in_write, "wb", buffering=0)
    readers_done = [loop.create_future(), loop.create_future()]
    closed = _all_done(loop, readers_done)
    readers: list[asyncio.ReadTransport] = []
    writer: asyncio.WriteTransport | None = None
    process: asyncio.subprocess.Process | None = None
    try:
        try:
            # Connected before the child starts, so a cancellation here leaves nothing running.
            for pipe, buffer, done in zip(output_pipes, (result.stdout, result.stderr), readers_done, strict=True):
                reader, _ = await loop.connect_read_pipe(functools.partial(PipeReader, buffer, done), pipe)
                readers.append(reader)
            writer, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, input_pipe)
            # Buffered in the transport, which flushes it while the hook reads, then closes (EOF).
            # A hook that exits without reading only breaks the pipe, which is not an error.
            writer.write(stdin)
            writer.close()
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=in_read, stdout=out_write, stderr=err_write, cwd=cwd, env=dict(env), start_new_session=True
            )
        finally:
            # The child has its own copies; ours would keep its stdin open and its output unfinished.
            for fd in child_ends:
                os.close(fd)
        result.exit_code, result.timed_out, _ = await await_group(process, closed, time_limit)
    except asyncio.CancelledError:
        if process is not None:
            await stop_group(process, closed, INTERRUPT_GRACE)  # an interrupt: the turn ends soon
        raise
    finally:
        for reader in readers:
            reader.close()
        # Input still unsent now will not be read: the hook has exited or was stopped.
        if writer is not None and writer.get_write_buffer_size():
            writer.abort()
        for pipe in [*output_pipes, input_pipe]:
            pipe.close()  # idempotent; covers pipes never handed to a transport
    return result
