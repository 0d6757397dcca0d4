"""The host's event loop: accept fronts on the Unix socket, give each its own `Connection` (its own LSP
session, environment and cwd from the hello) over one shared `Runtime`, and decide when to stop.

It stops on SIGTERM/SIGINT, after an idle grace period (no connection and an idle runtime), or when
a newer front makes it drain. Stopping unlinks the socket first, so fronts that arrive meanwhile
wait for `host.lock` and start the next host instead of talking to this one.

It accepts connections itself, not through `asyncio.start_unix_server`: asyncio's accept loop, out of
file descriptors, goes on trying and schedules a retry per try (CPython gh-151615), so the retries
multiplied and a host at its limit spun, logging a traceback for each. Here a failed accept pauses
accepting (`ACCEPT_PAUSE`, doubling up to `MAX_ACCEPT_PAUSE`), and connections are taken only up to
the open-file limit less `OWN_FILES`: past that they wait in the socket's backlog until one closes,
and the host keeps the files its own work needs (a module imported on first use, the database, a
model call, a sandbox) instead of failing every request of the editors it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import resource
import signal
import socket
import stat
from pathlib import Path

from openvaala_lsp import paths
from openvaala_lsp.host import hello
from openvaala_lsp.logs import configure_logging
from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol.api import IsIdleParams
from openvaala_lsp.rundir import RunDir, UnsafeRunDir, check_private, peer_credentials
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.startup import start_runtime
from openvaala_lsp.server.connection import Connection
from openvaala_lsp.wire import hello as wire_hello

logger = logging.getLogger(__name__)

IDLE_SECONDS_ENV = "OPENVAALA_HOST_IDLE_SECONDS"
DRAIN_SECONDS_ENV = "OPENVAALA_HOST_DRAIN_SECONDS"
DEFAULT_IDLE_SECONDS = 30.0
DEFAULT_DRAIN_SECONDS = 30.0  # longest wait for running turns before a draining host stops anyway
HELLO_TIMEOUT = 10.0
START_GARBAGE_DEADLINE = 10.0  # seconds after the start: the collector comes back then if never quiet before
BACKLOG = 100  # connections the kernel queues before a front's connect waits
ACCEPT_BATCH = 100  # accepted per wakeup, as asyncio does
ACCEPT_PAUSE = 0.1  # seconds without accepting after an accept failed; doubles while it fails again
MAX_ACCEPT_PAUSE = 2.0
OWN_FILES = 128  # file descriptors kept from connections for the host's own work


def serve(run: RunDir, ready_fd: int | None) -> int:
    log = paths.state_dir() / "host.log"
    paths.ensure_private_dir(log.parent)
    os.close(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600))
    paths.make_private(log)  # an older openvaala's was 0644: it holds conversations' errors
    configure_logging("WARNING", str(log))
    logging.getLogger("openvaala_lsp.host").setLevel(logging.INFO)  # a few lifecycle lines per host life
    return asyncio.run(_serve(run, ready_fd))


async def _serve(run: RunDir, ready_fd: int | None) -> int:
    idle = _seconds(IDLE_SECONDS_ENV, DEFAULT_IDLE_SECONDS)
    drain = _seconds(DRAIN_SECONDS_ENV, DEFAULT_DRAIN_SECONDS)
    return await Host(run, idle_seconds=idle, drain_seconds=drain).serve(ready_fd)


def max_clients() -> int:
    """Connections taken at once: the open-file limit less `OWN_FILES` (half of it, for a tiny limit)."""
    limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if limit == resource.RLIM_INFINITY:
        return 1 << 20
    return max(limit - OWN_FILES, limit // 2)


def _seconds(variable: str, default: float) -> float:
    try:
        value = float(os.environ.get(variable) or default)
    except ValueError:
        logger.warning("ignoring %s=%r: not a number of seconds", variable, os.environ[variable])
        return default
    return max(value, 0.0)


def collect_start_garbage() -> int:
    """Turns the garbage collector, off through the start (`main.run`), back on: collects what the
    start left in cycles (attrs' first drafts of its classes, among others) and freezes what lives
    on, so that no later collection walks the start's objects again. Returns what it collected. One
    full collection: done once the host is quiet, not on the way to an editor's answer."""
    collected = gc.collect()
    gc.freeze()
    gc.enable()
    return collected


async def _no_folders() -> list[WorkspaceFolder]:
    return []


class Host:
    def __init__(self, run: RunDir, *, idle_seconds: float, drain_seconds: float) -> None:
        self.run = run
        self.idle_seconds = idle_seconds
        self.drain_seconds = drain_seconds
        self.version = wire_hello.current_version()
        self.loop = asyncio.get_running_loop()
        self.runtime: asyncio.Future[Runtime] = self.loop.create_future()
        self.connections: set[Connection] = set()
        self.clients = 0  # accepted sockets, from before the hello until they close
        self.max_clients = max_clients()
        self.quiet_since = self.loop.time()
        self.listener: socket.socket | None = None
        self.accepting = False  # the listener is watched; False while paused or closed
        self.accept_pause = ACCEPT_PAUSE
        self.resume: asyncio.TimerHandle | None = None  # the end of a pause after a failed accept
        self.client_tasks: set[asyncio.Task[None]] = set()
        self.socket_inode: int | None = None
        self.draining_until: float | None = None  # set when a newer front arrived
        self.stopping = asyncio.Event()
        # is_idle takes a client; the host asks as itself
        self.self_client = Client(
            client_id="openvaala-host", environment={}, workspace_folders=_no_folders, attach=lambda sub: None
        )

    async def serve(self, ready_fd: int | None) -> int:
        self._listen()
        if ready_fd is not None:
            os.write(ready_fd, b"R")
            os.close(ready_fd)
        # the database opens while the first editors say hello and initialize
        starting = self.loop.create_task(start_runtime(self.runtime, definitions_file=Path(self.run.definitions)))
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stop, sig.name)
        watcher = self.loop.create_task(self._watch())
        logger.info("host %s started (pid %d) on %s", self.version, os.getpid(), self.run.socket)
        await self.stopping.wait()
        watcher.cancel()
        self._stop_listening()
        await asyncio.gather(*(connection.close() for connection in list(self.connections)))
        await starting
        if not self.runtime.exception():
            await self.runtime.result().stop()  # flushes and checkpoints the database
        logger.info("host %s (pid %d) stopped", self.version, os.getpid())
        return 0

    def _stop(self, why: str) -> None:
        if not self.stopping.is_set():
            logger.info("stopping: %s", why)
            self.stopping.set()

    # The socket

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # a stale socket: only the host.lock holder gets here
            if stat.S_ISSOCK(os.stat(self.run.socket).st_mode):
                os.unlink(self.run.socket)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        umask = os.umask(0o177)  # the socket is born 0600: no window where others could connect
        try:
            listener.bind(self.run.socket)
            listener.listen(BACKLOG)
        except OSError:
            listener.close()
            raise
        finally:
            os.umask(umask)
        listener.setblocking(False)
        self.listener = listener
        self.socket_inode = os.stat(self.run.socket).st_ino
        self._resume_accepting()

    def _close_listener(self) -> None:
        self._pause_accepting()
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def _pause_accepting(self, seconds: float | None = None) -> None:
        """Stops watching the listener: for `seconds`, or (None) until resumed."""
        if self.accepting and self.listener is not None:
            self.loop.remove_reader(self.listener.fileno())
        self.accepting = False
        if self.resume is not None:
            self.resume.cancel()
        self.resume = None if seconds is None else self.loop.call_later(seconds, self._resume_accepting)

    def _resume_accepting(self) -> None:
        self.resume = None
        if not self.accepting and self.listener is not None:
            self.loop.add_reader(self.listener.fileno(), self._accept)
            self.accepting = True

    def _accept(self) -> None:
        assert self.listener is not None
        for _ in range(ACCEPT_BATCH):
            if self.clients >= self.max_clients:
                # resumed when a connection closes (`_on_client`); fronts wait in the backlog meanwhile
                self._pause_accepting()
                logger.warning(
                    "%d connections, as many as the open-file limit leaves room for; more wait until one closes",
                    self.clients,
                )
                return
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS, ENOMEM, ...: trying again at once would spin
                pause, self.accept_pause = self.accept_pause, min(self.accept_pause * 2, MAX_ACCEPT_PAUSE)
                logger.error("cannot accept a connection (%s); trying again in %g s", exc.strerror or exc, pause)
                self._pause_accepting(pause)
                return
            self.accept_pause = ACCEPT_PAUSE
            self.clients += 1
            task = self.loop.create_task(self._on_client(conn))
            self.client_tasks.add(task)
            task.add_done_callback(self.client_tasks.discard)

    def _stop_listening(self) -> None:
        self._close_listener()
        try:
            if os.stat(self.run.socket).st_ino == self.socket_inode:
                os.unlink(self.run.socket)
        except FileNotFoundError:
            pass

    async def _check_socket(self) -> None:
        """A tmp cleaner or `rm` took the socket: fronts would start hosts that lose host.lock. Listen
        again, unless the whole run directory went (its OPENVAALA_HOME was deleted): then stop."""
        try:
            inode: int | None = os.stat(self.run.socket).st_ino
        except FileNotFoundError:
            inode = None
        if inode == self.socket_inode:
            return
        self._close_listener()
        try:
            check_private(self.run.path)
        except FileNotFoundError:
            self._stop(f"{self.run.path} was removed")
            return
        except UnsafeRunDir as exc:
            logger.error("%s", exc)
            self._stop("the run directory became unsafe")
            return
        logger.warning("%s was removed or replaced; listening again", self.run.socket)
        try:
            self._listen()
        except OSError as exc:
            logger.error("cannot listen again on %s: %s", self.run.socket, exc)
            self._stop("the socket is gone")

    # Connections

    async def _on_client(self, conn: socket.socket) -> None:
        """One accepted socket, counted in `clients` from its accept until it closes."""
        try:
            try:
                pid, uid = peer_credentials(conn)
                if uid != os.geteuid():
                    logger.warning("refused a connection from uid %d (pid %d): not this host's user", uid, pid)
                    conn.close()
                    return
                reader, writer = await asyncio.open_unix_connection(sock=conn, limit=wire_hello.MAX_HELLO_BYTES)
            except OSError:  # gone already
                conn.close()
                return
            try:
                connection = await self._greet(reader, writer)
                if connection is not None:
                    self.connections.add(connection)
                    try:
                        await connection.serve(reader)
                    finally:
                        self.connections.discard(connection)
            finally:
                writer.close()
        finally:
            self.clients -= 1
            self.quiet_since = self.loop.time()
            if self.resume is None and self.clients < self.max_clients:
                self._resume_accepting()  # from a pause at the limit; not one after a failed accept

    async def _greet(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Connection | None:
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT)
            message = json.loads(line)
        except (TimeoutError, ValueError, ConnectionError):  # ValueError: not JSON, or over the size limit
            return None
        if self.stopping.is_set():
            return None  # the front sees EOF and tries again, then finds the next host
        verdict, answer = hello.judge(message, self.version, draining=self.draining_until is not None)
        writer.write(wire_hello.line(answer))
        if verdict == hello.ACCEPT:
            return Connection(self.runtime, writer, environment=message["env"], cwd=message["cwd"])
        logger.warning("refused a front (pid %s): %s", message.get("pid"), answer["message"])
        if verdict == hello.DRAIN:
            self._drain()
        return None

    # Stopping

    def _drain(self) -> None:
        """Refuse new fronts at once; stop when no turn runs (or after `drain_seconds` anyway). Sessions
        still open are closed then: their fronts reconnect to the newer host or refuse it clearly."""
        if self.draining_until is None:
            self.draining_until = self.loop.time() + self.drain_seconds
            self._stop_listening()

    async def _watch(self) -> None:
        tick = min(0.5, max(0.05, self.idle_seconds / 4))
        started = self.loop.time()
        while True:
            await asyncio.sleep(tick)
            if not gc.isenabled() and (
                self.loop.time() - started >= START_GARBAGE_DEADLINE
                or (self.runtime.done() and await self._runtime_idle())
            ):
                logger.info("start: %d objects collected, the rest frozen", collect_start_garbage())
            if self.draining_until is not None:
                if self.loop.time() >= self.draining_until or await self._runtime_idle():
                    self._stop("a newer front arrived")
                continue
            await self._check_socket()
            quiet = self.clients == 0 and self.loop.time() - self.quiet_since >= self.idle_seconds
            if quiet and await self._runtime_idle() and self.clients == 0:
                # the next editor starts from the configuration files, as after any clean start
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.run.definitions)
                self._stop(f"no editor for {self.idle_seconds:g} s")

    async def _runtime_idle(self) -> bool:
        if not self.runtime.done():
            return False
        if self.runtime.exception():
            return True  # it never started: nothing to wait for
        runtime = self.runtime.result()
        return runtime.stopped or (await runtime.is_idle(self.self_client, IsIdleParams())).idle
