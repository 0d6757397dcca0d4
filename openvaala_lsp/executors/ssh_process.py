"""A command on an ssh executor's host, run the way `tools/process.py` runs one here.

sshd starts each exec request in a session of its own, so the remote `sh` we exec into leads a
process group that holds the command and everything it starts: its pid (printed first, before the
command's output) is the group to signal. stdout and stderr are merged on the remote side, so the
output keeps its order; it is read to the end and bounded here (`HeadTailBuffer`), whatever the host
sends. Stopping (timeout, interrupt, background jobs holding the output): SIGTERM to the remote
group, a grace period, SIGKILL; each signal is its own exec request on the same connection.

In the sandbox, when the host has a `bwrap` that starts: the file system read-only but for the
writable roots and a private /tmp, what governs the agent read-only, no network unless allowed, and
PID, IPC and UTS namespaces of its own, and the host's credentials (`ssh_host.py`) shown empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal

import asyncssh

from openvaala_lsp.executors.ssh_link import ConnectionDropped, HostFacts, SshLink
from openvaala_lsp.tools.base import SandboxPolicy
from openvaala_lsp.tools.process import EXIT_GRACE, INTERRUPT_GRACE, KILL_WAIT, TERM_GRACE, ProcessResult
from openvaala_lsp.tools.truncate import HeadTailBuffer

# runs as `sh -c WRAPPER openvaala WORKDIR ARGV...`: the group's id first, then the command
WRAPPER = 'echo "$$"; exec 2>&1 </dev/null; cd -- "$1" || exit 126; shift; exec "$@"'
POLL = 0.02  # seconds between looks at whether the exit status came
SIGNAL_TIMEOUT = 5.0
BWRAP_BASE = [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
]


def exports(environment: tuple[tuple[str, str], ...]) -> str:
    return "".join(f"export {name}={shlex.quote(value)}; " for name, value in environment)


def remote_command(workdir: str, argv: list[str], environment: tuple[tuple[str, str], ...]) -> str:
    words = [workdir, *argv]
    quoted = " ".join(shlex.quote(word) for word in words)
    return f"{exports(environment)}exec /bin/sh -c {shlex.quote(WRAPPER)} openvaala {quoted}"


def sandboxed(argv: list[str], policy: SandboxPolicy, workdir: str, facts: HostFacts) -> list[str]:
    """`argv` inside bwrap as `policy` asks (the remote host's bwrap, from its PATH), the host's
    credentials shown empty."""
    args = ["bwrap", *BWRAP_BASE]
    if not policy.network:
        args.append("--unshare-net")
    for path in policy.visible:  # roots under /tmp, seen through the private one
        if path not in policy.writable:
            args += ["--ro-bind-try", path, path]
    for path in policy.writable:
        args += ["--bind-try", path, path]
    for path in policy.read_only:
        args += ["--ro-bind-try", path, path]
    for path in facts.credential_dirs:
        args += ["--tmpfs", path, "--remount-ro", path]
    for path in facts.credential_files:
        args += ["--ro-bind", "/dev/null", path]
    return [*args, "--chdir", workdir, "--", *argv]


async def run_remote(
    link: SshLink,
    argv: list[str],
    *,
    workdir: str,
    time_limit: float,
    read_limit: int,
) -> ProcessResult:
    """Runs `argv` in `workdir` on the host; ConnectionDropped if the connection goes before its end."""
    connection = await link.connection()
    command = remote_command(workdir, argv, link.target.environment)
    with link.dropped("starting the command"):
        process = await connection.create_process(
            command, encoding=None, stdin=asyncssh.DEVNULL, stderr=asyncssh.STDOUT
        )
    buffer = HeadTailBuffer(limit=read_limit)
    group: list[int] = []
    reading = asyncio.ensure_future(_read(process, buffer, group))
    reading.add_done_callback(_retrieved)  # a read the lost connection broke is reported below
    result = ProcessResult(output=buffer, exit_code=None)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + time_limit
    try:
        while not reading.done():
            if process.exit_status is not None or process.exit_signal is not None:
                try:  # exited: its output may stay open a moment (a background job holding it)
                    await asyncio.wait_for(asyncio.shield(reading), EXIT_GRACE)
                except TimeoutError:
                    result.stopped_background = True
                    await _stop(connection, group, reading, TERM_GRACE)
                break
            if loop.time() >= deadline:
                result.timed_out = True
                await _stop(connection, group, reading, TERM_GRACE)
                break
            await asyncio.wait([reading], timeout=POLL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait_closed(), KILL_WAIT)
    except asyncio.CancelledError:
        await _stop(connection, group, reading, INTERRUPT_GRACE)
        process.close()
        raise
    finally:
        if not reading.done():
            reading.cancel()
    if not result.timed_out:
        result.exit_code = _exit_code(process)
    broken = reading.done() and not reading.cancelled() and reading.exception() is not None
    if (result.exit_code is None or broken) and not result.timed_out and link.is_lost(connection):
        raise ConnectionDropped(link.loss_text("the command ran (whether it finished is unknown)"))
    if broken:
        raise reading.exception()  # type: ignore[misc]
    return result


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


async def _read(process: asyncssh.SSHClientProcess[bytes], buffer: HeadTailBuffer, group: list[int]) -> None:
    first = await process.stdout.readline()
    if first.strip().isdigit():
        group.append(int(first))
    else:
        buffer.feed(first)
    while chunk := await process.stdout.read(65536):
        buffer.feed(chunk)


def _exit_code(process: asyncssh.SSHClientProcess[bytes]) -> int | None:
    if process.exit_signal is not None:
        name = process.exit_signal[0]
        try:
            return -signal.Signals[f"SIG{name}"].value
        except KeyError:
            return -1
    status = process.exit_status
    return status if status is not None and status >= 0 else None


async def _stop(
    connection: asyncssh.SSHClientConnection, group: list[int], reading: asyncio.Future[None], grace: float
) -> None:
    if not group:
        return
    await _signal(connection, group[0], "TERM")
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reading), grace)
    finally:
        await _signal(connection, group[0], "KILL")
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(reading), KILL_WAIT)


async def _signal(connection: asyncssh.SSHClientConnection, pgid: int, name: str) -> None:
    if pgid <= 1:
        return
    with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
        command = f"kill -{name} -- -{pgid} 2>/dev/null || kill -{name} {pgid} 2>/dev/null"
        await connection.run(command, check=False, timeout=SIGNAL_TIMEOUT)
