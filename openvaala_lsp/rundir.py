"""The host's run directory (socket, locks, pid file) and the checks that keep other users out.

Three separate guards protect the socket: the directory (ours, mode 0700), the socket file (0600,
made by the host under umask 0o177) and the peer's uid read with SO_PEERCRED on both ends.
"""

from __future__ import annotations

import os
import pwd
import socket
import stat
import struct
from collections.abc import Mapping

SOCKET_NAME = "host.sock"
# sun_path holds 108 bytes on Linux (104 on macOS), including the terminating NUL
MAX_SOCKET_PATH = 103


class UnsafeRunDir(Exception):
    """The run directory could let another user reach or impersonate the host."""


TMP_SIBLINGS = 32  # /tmp/openvaala-UID, then .1 to .31: what another user made first is passed by


class RunDir:
    """One host's files: `host.sock`, `host.lock` (held by the host for life), `spawn.lock` (held by a
    front while it starts a host), `host.pid` and `definitions.json`."""

    def __init__(self, path: str, private: tuple[str, ...], own_parent: str | None = None) -> None:
        self.path = path
        self.private = private  # directories to create and check, outermost first
        # openvaala's own directory that holds them (OPENVAALA_HOME, the state directory): made 0700,
        # also when an older version left it open
        self.own_parent = own_parent
        self.socket = os.path.join(path, SOCKET_NAME)
        self.host_lock = os.path.join(path, "host.lock")
        self.spawn_lock = os.path.join(path, "spawn.lock")
        self.pid_file = os.path.join(path, "host.pid")
        # what editors set with setDefinitions, kept for a host that starts after one died
        self.definitions = os.path.join(path, "definitions.json")


def openvaala_home(environ: Mapping[str, str]) -> str | None:
    """`OPENVAALA_HOME` of `environ`, resolved like `openvaala_lsp.paths.home()`."""
    value = environ.get("OPENVAALA_HOME")
    return os.path.realpath(os.path.expanduser(value)) if value else None


def run_dir(environ: Mapping[str, str] = os.environ, tmp: str = "/tmp") -> RunDir:
    """Where the host listens, the same for every front of the user:

    1. `$OPENVAALA_HOME/run`;
    2. `$XDG_RUNTIME_DIR/openvaala`, when that directory is the user's own and only the user can
       write to it (as systemd makes it);
    3. `run` in the state directory (`$XDG_STATE_HOME/openvaala`, else `~/.local/state/openvaala`),
       when the user can make it there;
    4. `/tmp/openvaala-$UID` only as the last resort, or the first of its numbered siblings
       (`.1`, `.2`, ...) that is the user's own or free: another user's cannot stop openvaala.

    A path whose socket would not fit in sun_path moves to `<the /tmp one>/<hash of the path>`."""
    home = openvaala_home(environ)
    runtime = _own_runtime_dir(environ)
    own_parent = None
    if home:
        path: str | None = os.path.join(home, "run")
        own_parent = home
    elif runtime:
        path = os.path.join(runtime, "openvaala")
    else:
        own_parent = _state_dir(environ)
        path = os.path.join(own_parent, "run")
        if not _can_make(path):
            path = own_parent = None
    if path is not None and len(os.fsencode(os.path.join(path, SOCKET_NAME))) <= MAX_SOCKET_PATH:
        return RunDir(path, (path,), own_parent)
    base = _tmp_dir(tmp)
    if path is None:
        return RunDir(base, (base,))
    import hashlib  # only for a path too long, off an editor's warm start (see front.connect.host_log_path)

    short = os.path.join(base, hashlib.sha256(os.fsencode(path)).hexdigest()[:16])
    return RunDir(short, (base, short))


def _own_runtime_dir(environ: Mapping[str, str]) -> str | None:
    path = environ.get("XDG_RUNTIME_DIR", "")
    if not os.path.isabs(path):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return None
    return path


def _state_dir(environ: Mapping[str, str]) -> str:
    """`openvaala_lsp.paths.state_dir()` for `environ`."""
    value = environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(value):
        user_home = environ.get("HOME") or _passwd_home()
        value = os.path.join(user_home, ".local", "state")
    return os.path.join(value, "openvaala")


def _passwd_home() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return "/nonexistent"


def _can_make(path: str) -> bool:
    """Whether the user can make `path` (or has it): its nearest existing ancestor is writable."""
    ancestor = path
    while not os.path.lexists(ancestor):
        parent = os.path.dirname(ancestor)
        if parent == ancestor:
            return False
        ancestor = parent
    return os.path.isdir(ancestor) and os.access(ancestor, os.W_OK | os.X_OK)


def _tmp_dir(tmp: str) -> str:
    """The first of `/tmp/openvaala-$UID` and its numbered siblings that is the user's own private
    directory or free; the first one when none is (`ensure_private` then says why it refuses)."""
    uid = os.geteuid()
    names = [os.path.join(tmp, f"openvaala-{uid}")]
    names += [f"{names[0]}.{n}" for n in range(1, TMP_SIBLINGS)]
    for name in names:
        try:
            info = os.lstat(name)
        except FileNotFoundError:
            return name
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077:
            return name
    return names[0]


def ensure_private(run: RunDir) -> None:
    """Creates the run directory (0700) or checks that the existing one is ours and closed to others."""
    if run.own_parent is not None:
        os.makedirs(run.own_parent, 0o700, exist_ok=True)
        if stat.S_IMODE(os.stat(run.own_parent).st_mode) != 0o700:
            os.chmod(run.own_parent, 0o700)
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
