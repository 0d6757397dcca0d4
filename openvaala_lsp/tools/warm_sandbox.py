"""Warm sandboxes: a bubblewrap sandbox kept running between commands, whose own process
(`sandbox_spawner.py`) starts each command inside it. A new sandbox costs ~10 ms of namespaces and
mounts (12 ms a command on this machine, against 1.6 for the bare shell), the largest part of the gap
between a model's tool call and its next request; a warm one costs a spawn (~1 ms).

What a command finds is what a sandbox of its own would give it: the same mounts and namespaces
(a warm sandbox serves one set of `sandbox.mounts` only), an empty /tmp and /dev/shm, and no process
left by the command before it, since after each command every other process of the sandbox is killed
and its tmpfs emptied (while the caller goes on; the next command waits for it). One command at a
time runs in a warm sandbox.

The first command of a kind runs in a sandbox of its own while a warm one starts for the next; so
does any command when none is free, and every command if a warm sandbox cannot start here. Idle warm
sandboxes end after `IDLE_SECONDS`; all end with the runtime (`close`), or with this process.

A command can stop its spawner (`kill -STOP $PPID`), kill it, or undo what the cleaner relies on:
none of it may hold the caller. The host follows each command through a pidfd of its own, so its end
is known whatever the spawner does; a spawner that does not report that end within
`EXIT_REPORT_SECONDS` or does not answer is killed with its sandbox, one that cannot clean is
discarded, and a new warm sandbox starts for the next command.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import functools
import json
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import SandboxPolicy
from openvaala_lsp.tools.process import NO_PID, Started

logger = logging.getLogger(__name__)

IDLE_SECONDS = 120.0  # an unused warm sandbox ends after this
LIMIT = 4  # warm sandboxes at most, busy or idle
START_SECONDS = 10.0  # for a warm sandbox to say it is ready
REAP_SECONDS = 3.0  # for a discarded sandbox to end by itself (a spawner busy cleaning ends after)
ANCILLARY_SPACE = socket.CMSG_SPACE(4)  # a pidfd
REPLY_SECONDS = 5.0  # for any other answer (a clean waits up to 2 s for killed processes)
EXIT_REPORT_SECONDS = 1.0  # for the spawner to report the end of a command the host saw end
SPAWNER = Path(__file__).with_name("sandbox_spawner.py")

Key = tuple[str, ...]  # the sandbox's bubblewrap arguments: which sandbox a command needs


class SandboxLost(Exception):
    """The warm sandbox ended, or stopped answering."""


@attrs.define(eq=False)
class RemoteProcess:
    """A command a warm sandbox started: its pid as this process sees it, its end as the sandbox
    reports it (None: unknown, the sandbox was lost after the command ended)."""

    pid: int
    exited: asyncio.Future[int | None]

    @property
    def returncode(self) -> int | None:
        return self.exited.result() if self.exited.done() else None

    async def wait(self) -> int | None:
        return await asyncio.shield(self.exited)  # a wait that times out does not end the command


class WarmSandbox:
    """One running sandbox and the socket to its spawner."""

    def __init__(
        self, key: Key, process: asyncio.subprocess.Process, channel: socket.socket, made: Sequence[str] = ()
    ) -> None:
        self.key = key
        self.made = tuple(made)  # the mount points it holds in the workspace (`sandbox.MountPoints`)
        self.process = process  # bubblewrap
        self._channel = channel
        self._replies: asyncio.Queue[tuple[dict[str, Any], int] | None] = asyncio.Queue()
        self._exited: asyncio.Future[int | None] | None = None  # the running command's end
        self._pidfd = -1  # the running command's, watched until it ends
        self._silence: asyncio.TimerHandle | None = None  # after its end, until the spawner reports it
        self.lost = False
        self.expiry: asyncio.TimerHandle | None = None
        asyncio.get_running_loop().add_reader(channel.fileno(), self._readable)

    def _readable(self) -> None:
        while not self.lost:
            try:
                data, ancillary, _, _ = self._channel.recvmsg(1 << 16, ANCILLARY_SPACE)
            except BlockingIOError:
                return
            except OSError:
                data, ancillary = b"", []
            fds = _received_fds(ancillary)
            message = json.loads(data) if data else None
            pid = self._follow(fds.pop(0)) if message and "started" in message and fds else 0
            for fd in fds:
                os.close(fd)
            if message is None:
                self.discard()
                return
            if "exit" in message and self._exited is not None and not self._exited.done():
                self._exited.set_result(int(message["exit"]))
            else:
                self._replies.put_nowait((message, pid))

    def _follow(self, pidfd: int) -> int:
        """The started command's pid as this process sees it (0 if unknown), read at once from the
        pidfd that came with it (it stays a zombie till the next message); its end is watched."""
        self._unwatch()
        self._pidfd = pidfd
        asyncio.get_running_loop().add_reader(pidfd, self._command_ended)
        try:
            with open(f"/proc/self/fdinfo/{self._pidfd}") as info:
                return next((int(line.split()[1]) for line in info if line.startswith("Pid:")), 0)
        except OSError:
            return 0

    def _command_ended(self) -> None:
        """The pidfd says the command ended: the spawner reports it at once, unless it was stopped."""
        self._unwatch()
        if self._exited is not None and not self._exited.done():
            self._silence = asyncio.get_running_loop().call_later(EXIT_REPORT_SECONDS, self._silent, self._exited)

    def _silent(self, exited: asyncio.Future[int | None]) -> None:
        if not exited.done():
            exited.set_result(None)  # how it ended only the spawner could say
            self.discard(kill=True)

    def _unwatch(self) -> None:
        if self._pidfd >= 0:
            asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1

    async def reply(self, seconds: float = REPLY_SECONDS) -> tuple[dict[str, Any], int]:
        """The spawner's next message and the pid of the process it sent a pidfd of (0 if none);
        SandboxLost if it ends first, TimeoutError (the sandbox ended) if it says nothing in time."""
        try:
            answer = await asyncio.wait_for(self._replies.get(), seconds)
        except TimeoutError:
            self.discard(kill=True)
            raise
        if answer is None:
            raise SandboxLost("it ended")
        return answer

    def send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        try:
            socket.send_fds(self._channel, [json.dumps(message).encode()], list(fds))
        except OSError as exc:  # gone, or a message too big for one datagram (a huge environment)
            self.discard()
            raise SandboxLost(str(exc)) from exc

    async def start(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], output: int) -> RemoteProcess:
        """Starts a command; OSError if it cannot start (the sandbox stays usable), SandboxLost if the
        sandbox ended before the command could start (the spawner says when it may)."""
        self._exited = asyncio.get_running_loop().create_future()
        self.send({"argv": list(argv), "cwd": cwd, "env": dict(env)}, [output])
        message: dict[str, Any] = {}
        pid = NO_PID
        try:
            message, _ = await self.reply()
            if "starting" in message:
                message, pid = await self.reply()
        except TimeoutError:  # whether it started is unknown: it must not start again elsewhere
            raise OSError(errno.ETIMEDOUT, f"the warm sandbox did not answer in {REPLY_SECONDS:g} s") from None
        except SandboxLost:
            if "starting" not in message:
                raise
            # it may have run: never to start again; it ended with the sandbox (killed)
            return RemoteProcess(pid=NO_PID, exited=self._exited)
        if "started" in message:
            if pid <= 0:  # its group could not be signalled: it ends with the sandbox
                self.discard()
                return RemoteProcess(pid=NO_PID, exited=self._exited)
            return RemoteProcess(pid=pid, exited=self._exited)
        raise OSError(int(message.get("errno", 0)), str(message.get("error", message)))

    async def clean(self) -> None:
        """Ends what the last command left (processes, files in its tmpfs); SandboxLost, the sandbox
        discarded, if the spawner could not (it deleted nothing then) or did not answer."""
        self.send({"clean": True})
        try:
            message, _ = await self.reply()
        except TimeoutError:
            raise SandboxLost("no answer") from None
        if "clean" not in message:
            self.discard()
            raise SandboxLost(f"it could not clean: {message.get('unclean', message)}")

    def discard(self, *, kill: bool = False) -> None:
        """Ends the sandbox: its spawner reads the socket's end and exits, bubblewrap with it, and a
        command still running there is killed (`_reap` waits for that). `kill`, for a spawner that
        does not answer (stopped): bubblewrap is killed at once, and with it (`--die-with-parent`,
        the end of its PID namespace) everything in the sandbox."""
        if kill:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        if self.lost:
            return
        self.lost = True
        for timer in (self.expiry, self._silence):
            if timer is not None:
                timer.cancel()
        self._unwatch()
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(self._channel.fileno())
        self._channel.close()
        self._replies.put_nowait(None)
        if self._exited is not None and not self._exited.done():
            self._exited.set_result(-signal.SIGKILL)


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    return [
        fd
        for level, kind, data in ancillary
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
        for fd in array.array("i", data[: len(data) - len(data) % 4])
    ]


class WarmSandboxes:
    """The runtime's warm sandboxes, by the mounts they serve."""

    def __init__(self, *, idle_seconds: float = IDLE_SECONDS, limit: int = LIMIT) -> None:
        self.idle_seconds = idle_seconds
        self.limit = limit
        self._idle: dict[Key, list[WarmSandbox]] = {}
        self._all: set[WarmSandbox] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._starts: dict[Key, asyncio.Task[None]] = {}  # of them, those starting a sandbox, by kind
        self._cleaning: dict[Key, set[asyncio.Task[None]]] = {}  # and those that clean one, by kind
        self.unusable: str | None = None  # why no warm sandbox can start here, once one failed to
        self.closed = False

    @contextlib.asynccontextmanager
    async def launch(
        self, policy: SandboxPolicy, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int
    ) -> AsyncIterator[Started]:
        """`process.Launch` in the sandbox `policy` asks for: a warm one if one is free."""
        planned = sandbox.plan(policy, cwd)
        key = planned.args
        warm = await self._next(key)
        process: RemoteProcess | None = None
        if warm is not None:
            try:
                process = await warm.start(argv, cwd, env, output)
            except SandboxLost:
                self._forget(warm)  # this command gets a sandbox of its own
            except OSError:  # the command could not start; the sandbox is as it was
                self._give_back(warm)
                raise
            except BaseException:  # interrupted while it started: whatever it holds ends with it
                warm.discard()
                self._forget(warm)
                raise
        if process is None or warm is None:
            self._warm_up(planned)
            async with sandbox.start(policy, argv, cwd=cwd, env=env, output=output) as own:
                yield own
            return
        try:
            yield process
        except BaseException:
            warm.discard()  # whatever it holds ends with it
            self._forget(warm)
            raise
        # cleaned while the caller goes on (what the command left dies as it would with a sandbox of
        # its own, which ends beside the caller too); the next command of its kind waits for it
        cleaning = self._spawn(self._clean(warm))
        self._cleaning.setdefault(key, set()).add(cleaning)
        cleaning.add_done_callback(self._cleaning[key].discard)

    async def _clean(self, warm: WarmSandbox) -> None:
        try:
            await warm.clean()
        except SandboxLost:  # gone, and whatever ran in it with it
            self._forget(warm)
        except BaseException:
            warm.discard()
            self._forget(warm)
            raise
        else:
            self._give_back(warm)

    async def _next(self, key: Key) -> WarmSandbox | None:
        """An idle warm sandbox of this kind, or one being cleaned once it is."""
        warm = self._take(key)
        while warm is None and self._cleaning.get(key):
            await asyncio.wait(self._cleaning[key], return_when=asyncio.FIRST_COMPLETED)
            warm = self._take(key)
        return warm

    def _take(self, key: Key) -> WarmSandbox | None:
        idle = self._idle.get(key)
        while idle:
            warm = idle.pop()
            if warm.expiry is not None:
                warm.expiry.cancel()
            if not warm.lost:
                return warm
            self._forget(warm)
        return None

    def _give_back(self, warm: WarmSandbox) -> None:
        if warm.lost or self.closed:
            warm.discard()
            self._forget(warm)
            return
        self._idle.setdefault(warm.key, []).append(warm)
        warm.expiry = asyncio.get_running_loop().call_later(self.idle_seconds, self._expire, warm)

    def _expire(self, warm: WarmSandbox) -> None:
        idle = self._idle.get(warm.key, [])
        if warm in idle:
            idle.remove(warm)
        warm.discard()
        self._forget(warm)

    def _forget(self, warm: WarmSandbox) -> None:
        """A discarded sandbox: no longer counted, and waited for until it has ended."""
        if warm in self._all:
            self._all.remove(warm)
            self._spawn(_reap(warm.process, warm.made))

    def _warm_up(self, planned: sandbox.Plan) -> None:
        key = planned.args
        if self.closed or self.unusable or key in self._starts:
            return
        if len(self._all) >= self.limit:
            # an idle one of another kind makes room (the one idle longest), else none starts
            idle = [warm for kind in self._idle.values() for warm in kind]
            if not idle:
                return
            self._expire(min(idle, key=lambda warm: warm.expiry.when() if warm.expiry else 0.0))
        starting = self._starts[key] = self._spawn(self._start(planned))
        starting.add_done_callback(lambda _: self._starts.pop(key, None))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _start(self, planned: sandbox.Plan) -> None:
        try:
            warm = await _start_sandbox(planned)
        except (OSError, SandboxLost) as exc:
            self.unusable = str(exc)
            logger.warning("commands start a sandbox each: a warm sandbox could not start (%s)", exc)
            return
        self._all.add(warm)
        self._give_back(warm)

    async def close(self) -> None:
        """Ends every warm sandbox (a command still running in one ends as killed)."""
        self.closed = True
        for task in list(self._starts.values()):
            task.cancel()
        for warm in list(self._all):
            warm.discard()
            self._forget(warm)
        self._idle.clear()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _start_sandbox(planned: sandbox.Plan) -> WarmSandbox:
    key = planned.args
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sandbox.MOUNT_POINTS.hold(planned.made)  # until the sandbox has ended (`_reap`)
    try:
        ours.setblocking(False)
        with sandbox.filter_fds() as (fds, filter_args):
            argv = [key[0], *filter_args, *key[1:], *_spawner(planned.prefix), str(theirs.fileno())]
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=(theirs.fileno(), *fds),
                start_new_session=True,
                env={"PATH": os.defpath},
            )
    except BaseException:
        ours.close()
        sandbox.MOUNT_POINTS.release(planned.made)
        raise
    finally:
        theirs.close()
    warm = WarmSandbox(key, process, ours, planned.made)
    try:
        try:
            message, _ = await warm.reply(START_SECONDS)
        except TimeoutError:
            raise SandboxLost(f"not ready in {START_SECONDS:g} s") from None
        if "ready" not in message:
            raise SandboxLost(f"unexpected first message: {message}")
    except BaseException:
        warm.discard()
        await _reap(process, planned.made)
        raise
    return warm


@functools.cache
def _spawner(prefix: tuple[str, ...]) -> list[str]:
    """The end of a warm sandbox's command line: Python running the spawner, behind the plan's
    prefix (`landlock_scope.py` with the network), whose scope its commands keep."""
    return ["--chdir", "/", "--", *prefix, *sandbox.python(), "-c", SPAWNER.read_text()]


async def _reap(process: asyncio.subprocess.Process, made: Sequence[str] = ()) -> None:
    """Waits for a discarded sandbox to end: its spawner exits at the socket's end, bubblewrap's init
    with it, and bubblewrap once nothing is left in the sandbox; killed if that takes too long (a
    spawner that is stopped never reads the socket's end). Then the mount points it made are let go.
    Bounded: a process stuck in the kernel must not hold the runtime's end."""
    try:
        await asyncio.wait_for(process.wait(), REAP_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), REAP_SECONDS)
    finally:
        sandbox.MOUNT_POINTS.release(made)
