"""Reaching the host: connect, or start one under `spawn.lock`, then exchange the hello.

`host.lock` (held by the host for life) makes the host unique and entitles its holder to replace a
stale socket. `spawn.lock` only stops fronts that start together from spawning hosts that would
lose `host.lock` anyway. A front spawns only while `host.lock` is free, so it waits out a host that
is still stopping (idle exit, drain) instead of racing it for the database.

`openvaala sql`, `usage` and `export` reach the host the same way, starting one when none runs: only
a host holds `host.lock`, so nothing else can keep an editor's host from starting.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import socket
import sys
import time
from typing import Any, NoReturn

from openvaala_lsp.rundir import RunDir, peer_credentials
from openvaala_lsp.wire import hello as wire_hello

CONNECT_TIMEOUT = 60.0  # covers waiting for a draining host and a cold start
READY_TIMEOUT = 30.0
HELLO_TIMEOUT = 10.0
POLL_INTERVAL = 0.01
MAX_SPAWNS = 2  # per connect: a host that dies before it is ready twice will not do better a third time
MAX_LOG_BYTES = 4 << 20


class FrontError(Exception):
    """Fatal for the front: the message is for the user (stderr)."""


class HostLink:
    """A connected socket past the hello. `leftover` holds bytes that followed the hello answer."""

    def __init__(self, sock: socket.socket, leftover: bytes) -> None:
        self.sock = sock
        self.leftover = leftover


def connect(run: RunDir, hello: dict[str, Any]) -> HostLink:
    deadline = time.monotonic() + CONNECT_TIMEOUT
    spawns = 0
    while True:
        sock = _try_connect(run.socket)
        if sock is None:
            with _Flock(run.spawn_lock, deadline):
                sock, spawns = _connect_or_spawn(run, deadline, spawns)
        answered = _handshake(sock, hello)
        if answered is None:  # the host closed during the hello: it is stopping; try again
            sock.close()
            time.sleep(POLL_INTERVAL)  # not at once: a host that closes every connection would make this spin
        else:
            answer, leftover = answered
            if answer.get("ok") is True:
                return HostLink(sock, leftover)
            sock.close()
            if answer.get("reason") != wire_hello.DRAINING:
                raise FrontError(str(answer.get("message") or f"the runtime host refused this front: {answer}"))
        # a draining host has unlinked its socket; the next round waits for it to exit, then spawns
        if time.monotonic() > deadline:
            raise FrontError(f"could not reach the openvaala runtime host at {run.socket}")


def _connect_or_spawn(run: RunDir, deadline: float, spawns: int) -> tuple[socket.socket, int]:
    """Under spawn.lock: another front may have started the host meanwhile, or a host may still be
    stopping; spawn only once host.lock is free."""
    while True:
        sock = _try_connect(run.socket)
        if sock is not None:
            return sock, spawns
        if _host_lock_free(run):
            if spawns >= MAX_SPAWNS:
                raise FrontError(f"the openvaala runtime host failed to start; see {host_log_path()}")
            spawns += 1
            spawn_host()
            continue
        if time.monotonic() > deadline:
            raise FrontError(f"a runtime host holds {run.host_lock} but does not answer on {run.socket}")
        time.sleep(POLL_INTERVAL)


def _try_connect(path: str) -> socket.socket | None:
    """A socket connected to a host of our own uid; None if no host listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise FrontError(f"cannot connect to the runtime host at {path}: {exc.strerror}") from None
    pid, uid = peer_credentials(sock)
    if uid != os.geteuid():
        sock.close()
        raise FrontError(
            f"refusing the runtime host socket {path}: it is served by uid {uid} (pid {pid}), "
            f"not by this user (uid {os.geteuid()})"
        )
    return sock


def _handshake(sock: socket.socket, hello: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
    sock.settimeout(HELLO_TIMEOUT)
    data = b""
    try:
        sock.sendall(wire_hello.line(hello))
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    except TimeoutError:
        # a host at its connection limit leaves new ones waiting; its log says so
        raise FrontError(
            f"the runtime host did not answer the hello within {HELLO_TIMEOUT:.0f} s; see {host_log_path()}"
        ) from None
    except OSError:
        return None
    sock.settimeout(None)
    head, _, leftover = data.partition(b"\n")
    try:
        answer = json.loads(head)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise FrontError(f"the runtime host answered the hello with {head[:200]!r}")
    return answer, leftover


def _host_lock_free(run: RunDir) -> bool:
    """Only called under spawn.lock, where no host can be starting, so probing cannot make one lose."""
    fd = os.open(run.host_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops a lock we got
    return True


class _Flock:
    """flock, not lockf: POSIX record locks vanish when any fd of the file is closed."""

    def __init__(self, path: str, deadline: float) -> None:
        self.path = path
        self.deadline = deadline
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > self.deadline:
                    os.close(self.fd)
                    raise FrontError(f"timed out waiting for {self.path}") from None
                time.sleep(POLL_INTERVAL)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def host_log_path() -> str:
    # A start-up trick that stays: `paths` (pathlib) is loaded only on the way to starting a host, off
    # an editor's warm start, which the issue holds to a fraction of Codex app-server's.
    from openvaala_lsp import paths

    return str(paths.state_dir() / "host.log")


def spawn_host() -> None:
    """Starts a host detached (double fork, own session, cwd /, no editor fds) and waits until it
    listens or exits (it lost host.lock or failed; the caller connects to find out)."""
    from openvaala_lsp import paths

    log = host_log_path()
    paths.ensure_private_dir(os.path.dirname(log))  # the log tells of conversations: the user's alone
    paths.make_private(log)
    try:
        if os.path.getsize(log) > MAX_LOG_BYTES:
            os.replace(log, log + ".1")
    except FileNotFoundError:
        pass
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _become_host(ready_w, log)
    os.close(ready_w)
    try:
        os.waitpid(pid, 0)  # the intermediate child exits at once
        poller = select.poll()
        poller.register(ready_r, select.POLLIN)
        if not poller.poll(READY_TIMEOUT * 1000):
            raise FrontError(f"the runtime host did not start within {READY_TIMEOUT:.0f} s; see {log}")
        os.read(ready_r, 1)  # b"R" once listening, b"" if it exited
    finally:
        os.close(ready_r)


def _become_host(ready_w: int, log: str) -> NoReturn:
    """The grandchild execs `python -m openvaala_lsp.host`: a fresh interpreter, so no lock another
    thread of this process held (`openvaala sql` reaches the host from a worker thread) is inherited."""
    try:
        os.setsid()  # signals aimed at the editor's process group stay away from the host
        if os.fork():
            os._exit(0)
        os.chdir("/")
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        _close_fds(keep=(0, 1, 2, ready_w))
        os.set_inheritable(ready_w, True)
        os.execv(sys.executable, [sys.executable, "-m", "openvaala_lsp.host", "--ready-fd", str(ready_w)])
    except BaseException:
        import traceback

        traceback.print_exc()  # into the host log (fd 2), once it is there
    finally:
        os._exit(127)  # the front sees the ready pipe close and connects to find out


def _close_fds(keep: tuple[int, ...]) -> None:
    """Closes every fd but `keep`: the editor's pipes, spawn.lock and any host socket of the front
    would otherwise live as long as the host (an editor would wait for EOF, fronts for the lock)."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every possible number
        open_fds = list(range(os.sysconf("SC_OPEN_MAX")))
    for fd in open_fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
