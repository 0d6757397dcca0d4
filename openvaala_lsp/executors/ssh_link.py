"""One ssh executor's connection, pooled: made on first use, kept alive, made again after it drops.

The remote host is not trusted more than a repository: its host key must be the one the known-hosts
file lists (a host it does not list is refused unless the definition accepts it, and then only that
first key is accepted for the runtime's life), nothing is forwarded to it (no agent, no X11, no
ports), no ssh client configuration file is read (the definition says everything), and whatever it
sends is bounded by the tools that read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
from collections.abc import Iterator

import asyncssh
import attrs

from openvaala_lsp.executors.ssh_target import SshTarget

CONNECT_TIMEOUT = 10.0
KEEPALIVE_INTERVAL = 15.0  # seconds between keepalives; three unanswered ones drop the connection
KEEPALIVE_COUNT = 3


class ExecutorUnavailable(Exception):
    """The host cannot be reached, or refused us, or we refused it; the message says which."""


class ConnectionDropped(ExecutorUnavailable):
    """The connection went away while it was in use."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@attrs.frozen
class HostFacts:
    """What the host has: a bwrap that starts (else why not), and the credential paths there."""

    sandbox: bool
    sandbox_problem: str
    credential_dirs: tuple[str, ...]
    credential_files: tuple[str, ...]

    def credential_at(self, real: str) -> str | None:
        """The credential path holding the real path `real`, if one does."""
        return next((path for path in (*self.credential_dirs, *self.credential_files) if _inside(real, path)), None)


class _Client(asyncssh.SSHClient):
    """Decides on a host key the known-hosts file does not list, and tells the link of a drop."""

    def __init__(self, link: SshLink, listed: bool) -> None:
        self._link = link
        self._listed = listed
        self.refusal: str | None = None

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        target = self._link.target
        pinned = self._link.pinned_key
        if self._listed:
            self.refusal = (
                f"its key ({key.get_fingerprint()}) is not the one {target.known_hosts} lists for it: the host was "
                "reinstalled, or someone is in the middle; fix the known-hosts file if it is expected"
            )
            return False
        if pinned is not None:
            if pinned.public_data == key.public_data:
                return True
            self.refusal = (
                f"its key ({key.get_fingerprint()}) changed since this runtime first accepted "
                f"{pinned.get_fingerprint()}"
            )
            return False
        if target.accept_unknown_host_key:
            self._link.pinned_key = key
            return True
        self.refusal = (
            f"it is not in {target.known_hosts} (its key is {key.get_fingerprint()}): add it there "
            "(ssh-keyscan), or set acceptUnknownHostKey in the executor's definition"
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._link.lost(exc)


class SshLink:
    """The pooled connection of one executor, its SFTP session and its remote roots (real paths)."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.pinned_key: asyncssh.SSHKey | None = None
        self._connection: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._roots: tuple[str, ...] = ()
        self._lock = asyncio.Lock()
        self._last_loss: str | None = None
        self.facts: HostFacts | None = None  # probed once per connection (`ssh_host.py`)

    @property
    def connected(self) -> bool:
        return self._connection is not None

    def lost(self, exc: Exception | None) -> None:
        self._last_loss = str(exc) if exc else "closed"
        self._connection = None
        self._sftp = None
        self.facts = None

    async def connection(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._connection is None:
                await self._connect()
            assert self._connection is not None
            return self._connection

    async def sftp(self) -> asyncssh.SFTPClient:
        connection = await self.connection()
        async with self._lock:
            if self._sftp is None:
                with self.dropped("opening SFTP"):
                    self._sftp = await connection.start_sftp_client()
            return self._sftp

    async def roots(self) -> tuple[str, ...]:
        await self.connection()
        return self._roots

    async def _connect(self) -> None:
        target = self.target
        listed, known = await asyncio.to_thread(self._known)
        client = _Client(self, listed)
        try:
            connection, _ = await asyncio.wait_for(
                asyncssh.create_connection(
                    lambda: client,
                    target.host,
                    target.port,
                    username=target.user,
                    config=[],  # no ~/.ssh/config: the definition is the whole story
                    known_hosts=known,
                    client_keys=[target.key_file] if target.key_file else None,
                    agent_path=() if target.agent else None,
                    agent_forwarding=False,
                    x11_forwarding=False,
                    password_auth=False,
                    kbdint_auth=False,
                    keepalive_interval=KEEPALIVE_INTERVAL,
                    keepalive_count_max=KEEPALIVE_COUNT,
                ),
                CONNECT_TIMEOUT,
            )
        except asyncssh.HostKeyNotVerifiable as error:
            why = f"the host key of {target.host}:{target.port} is refused: {client.refusal or error.reason}"
            raise ExecutorUnavailable(self._say(why)) from None
        except asyncssh.PermissionDenied as error:
            how = f"the key {target.key_file}" if target.key_file else "the ssh agent"
            raise ExecutorUnavailable(self._say(f"{target.label} refused {how}: {error.reason}")) from None
        except TimeoutError:
            said = f"{target.label} did not answer within {CONNECT_TIMEOUT:g} s"
            raise ExecutorUnavailable(self._say(said)) from None
        except (OSError, asyncssh.Error, ValueError) as error:
            raise ExecutorUnavailable(self._say(f"cannot connect to {target.label}: {error}")) from None
        try:
            self._connection = connection
            self._roots = await self._real_roots(await connection.start_sftp_client())
        except BaseException:
            connection.close()
            self._connection = None
            raise

    async def _real_roots(self, sftp: asyncssh.SFTPClient) -> tuple[str, ...]:
        self._sftp = sftp
        found: list[str] = []
        for root in self.target.roots:
            try:
                real = str(await sftp.realpath(root))
                if await sftp.isdir(real):
                    found.append(posixpath.normpath(real))
            except asyncssh.SFTPError:
                continue
        if not found:
            raise ExecutorUnavailable(
                self._say(f"none of its roots exists on {self.target.host}: {', '.join(self.target.roots)}")
            )
        return tuple(found)

    def _known(self) -> tuple[bool, str | bytes]:
        """Whether the known-hosts file lists any key for the host (then only those are accepted),
        and the file for asyncssh (no file: no entries)."""
        target = self.target
        if not os.path.isfile(target.known_hosts):
            return False, b""
        port = None if target.port == 22 else target.port
        try:
            keys = asyncssh.match_known_hosts(target.known_hosts, target.host, target.host, port)[0]
        except (OSError, ValueError):
            return False, target.known_hosts
        return bool(keys), target.known_hosts

    def _say(self, text: str) -> str:
        return f"executor {self.target.executor_id}: {text}"

    @contextlib.contextmanager
    def dropped(self, doing: str) -> Iterator[None]:
        """Turns a connection that went away during `doing` into ConnectionDropped."""
        try:
            yield
        except asyncssh.ChannelOpenError as e:
            if self._connection is not None and not self._connection.is_closed():  # refused, not gone
                said = f"{self.target.label} refused a new session while {doing} ({e.reason}): too many at once?"
                raise ExecutorUnavailable(self._say(said)) from None
            self.lost(e)
            raise ConnectionDropped(self.loss_text(doing, e)) from None
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError) as e:
            self.lost(e)
            raise ConnectionDropped(self.loss_text(doing, e)) from None

    def loss_text(self, doing: str, error: object | None = None) -> str:
        reason = error if error is not None else self._last_loss or "closed"
        return self._say(
            f"the connection to {self.target.label} was lost while {doing} ({reason}); the next tool call reconnects"
        )

    def is_lost(self, connection: asyncssh.SSHClientConnection) -> bool:
        return self._connection is not connection

    def inside_roots(self, real: str) -> str | None:
        """The innermost remote root holding the real path `real`."""
        return max((root for root in self._roots if _inside(real, root)), key=len, default=None)

    async def close(self) -> None:
        connection, self._connection, self._sftp = self._connection, None, None
        if connection is not None:
            connection.close()
            with contextlib.suppress(Exception):
                await connection.wait_closed()
