"""The host's run directory (socket, locks, pid file) and the checks that keep other users out.

Three separate guards protect the socket: the directory (ours, mode 0700), the socket file (0600,
made by the host under umask 0o177) and the peer's uid read with SO_PEERCRED on both ends.
"""

from __future__ import annotations

import os
import socket
import stat
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

SOCKET_NAME = "host.sock"
# sun_path holds 108 bytes on Linux (104 on macOS), including the terminating NUL
MAX_SOCKET_PATH = 103


class UnsafeRunDir(Exception):
    """The run directory could let another user reach or impersonate the host."""


class RunDir:
    """One host's files: `host.sock`, `host.lock` (held by the host for life), `spawn.lock` (held by a
    front while it starts a host), `host.pid` and `definitions.json`."""

    def __init__(self, path: str, private: tuple[str, ...]) -> None:
        self.path = path
        self.private = private  # directories to create and check, outermost first
        self.socket = os.path.join(path, SOCKET_NAME)
        self.host_lock = os.path.join(path, "host.lock")
        self.spawn_lock = os.path.join(path, "spawn.lock")
        self.pid_file = os.path.join(path, "host.pid")
        # what editors set with setDefinitions, kept for a host that starts after one died
        self.definitions = os.path.join(path, "definitions.json")


def openvaala_home(environ: Mapping[str, str]) -> str | None:
    """`OPENVAALA_HOME` resolved like `openvaala_lsp.paths.home()`, without importing pathlib."""
    value = environ.get("OPENVAALA_HOME")
    return os.path.realpath(os.path.expanduser(value)) if value else None


def run_dir(environ: Mapping[str, str] = os.environ) -> RunDir:
    """`$OPENVAALA_HOME/run`, else `$XDG_RUNTIME_DIR/openvaala`, else `/tmp/openvaala-$UID`; a path whose
    socket name would not fit in sun_path moves to `/tmp/openvaala-$UID/<hash of the path>`."""
    tmp = f"/tmp/openvaala-{os.geteuid()}"
    home = openvaala_home(environ)
    xdg = environ.get("XDG_RUNTIME_DIR", "")
    if home:
        path = os.path.join(home, "run")
    elif os.path.isabs(xdg) and os.path.isdir(xdg):
        path = os.path.join(xdg, "openvaala")
    else:
        return RunDir(tmp, (tmp,))
    if len(os.fsencode(os.path.join(path, SOCKET_NAME))) <= MAX_SOCKET_PATH:
        return RunDir(path, (path,))
    import hashlib

    short = os.path.join(tmp, hashlib.sha256(os.fsencode(path)).hexdigest()[:16])
    return RunDir(short, (tmp, short))


def ensure_private(run: RunDir) -> None:
    """Creates the run directory (0700) or checks that the existing one is ours and closed to others."""
    os.makedirs(os.path.dirname(run.private[0]), exist_ok=True)
    for path in run.private:
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # a restrictive umask may have left us without access
        except FileExistsError:
            pass
        check_private(path)


def check_private(path: str) -> None:
    info = os.lstat(path)
    fix = f"remove {path} or make it a directory owned by uid {os.geteuid()} with mode 0700"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeRunDir(f"refusing run directory {path}: it is not a plain directory; {fix}")
    if info.st_uid != os.geteuid():
        raise UnsafeRunDir(f"refusing run directory {path}: it is owned by uid {info.st_uid}; {fix}")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise UnsafeRunDir(f"refusing run directory {path}: mode {mode:#o} lets other users in; {fix}")


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the other end as of connect()/listen(); pid is -1 where the system does not say."""
    if hasattr(socket, "SO_PEERCRED"):
        size = struct.calcsize("3i")
        pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))
        return pid, uid
    # macOS: getsockopt(SOL_LOCAL=0, LOCAL_PEERCRED=1) gives struct xucred {u_int cr_version; uid_t cr_uid; ...}
    _, uid = struct.unpack("2I", sock.getsockopt(0, 1, struct.calcsize("2I")))
    return -1, uid
