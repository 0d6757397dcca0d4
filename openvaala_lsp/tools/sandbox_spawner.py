"""The process inside a warm sandbox (`warm_sandbox.py` starts it in bubblewrap): it starts that
sandbox's commands, so each pays a spawn instead of a sandbox of its own (~10 ms of namespaces and
mounts, traced). Standard library only, run as `python -I -S -c <this file>`: the package may lie
where the sandbox does not see it (under /tmp).

One command at a time, over the SOCK_SEQPACKET socket whose fd is argv[1], one JSON object a message:
  <- {"argv", "cwd", "env"} with the command's output fd: the command starts in a session of its own;
  -> {"starting": true} before it may run (from then on it is never started again elsewhere);
  -> {"started": true} with a pidfd of the command's process (its pid as the host sees it, whose
     group the host signals), or {"error": text, "errno": n} if it could not start;
  -> {"exit": returncode} when it ends (negative: the signal that ended it); it stays a zombie until
     the next message, so the pidfd names it till then;
  <- {"clean": true} once the host is done with it: every other process of the sandbox is killed and
     /tmp, /dev/shm and /dev are as they were at the start, so the next command finds what a sandbox of its own would;
  -> {"clean": true}; or {"unclean": why}, and it ends: a process outlived SIGKILL, or one of those
     folders is no longer the tmpfs it found at its start (then nothing is deleted: what lies there
     now is not the sandbox's, and may be the machine's).
It sends {"ready": true} first. It ends when the host closes the socket; bubblewrap, whose only child
it is, then ends the sandbox and whatever still runs in it.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Iterator

PR_SET_DUMPABLE = 4
EMPTIED = ("/tmp", "/dev/shm")  # the sandbox's own tmpfs folders, fresh for every command
DEV = "/dev"  # its own too, where only what the sandbox made at its start stays
KILL_WAIT = 2.0  # seconds for killed processes to be gone


def main() -> None:
    import ctypes  # here: process.py imports this file, and needs none of this

    # not dumpable: a command (same user, same namespace) can neither ptrace this process nor open
    # its fds through /proc
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    channel = socket.socket(fileno=int(sys.argv[1]))
    channel.set_inheritable(False)
    os.close(os.pidfd_open(os.getpid()))  # what waiting for a command needs (Linux 5.3): else no ready
    made = frozenset(os.listdir(DEV))
    own: dict[str, tuple[int, int]] = {}  # the tmpfs bubblewrap mounted: all it ever empties
    for folder in (*EMPTIED, DEV):
        mount = mount_of(folder)
        if mount is None:
            return  # it could not tell its tmpfs from another: no ready, no warm sandbox
        own[folder] = mount
    send(channel, {"ready": True})
    with selectors.DefaultSelector() as selector:
        selector.register(channel, selectors.EVENT_READ)
        ended: int | None = None  # the last command, not reaped yet
        while True:
            message, fds = receive(channel)
            if ended is not None:
                os.waitpid(ended, 0)
                ended = None
            if message is None:
                return
            if "clean" in message:
                unclean = clean(own, made)
                if unclean is not None:
                    send(channel, {"unclean": unclean})
                    return  # not the sandbox it was: it ends, and bubblewrap ends the rest
                send(channel, {"clean": True})
            else:
                ended = run(channel, selector, message, fds)


def send(channel: socket.socket, message: dict[str, object]) -> None:
    channel.sendmsg([json.dumps(message).encode()])


def receive(channel: socket.socket) -> tuple[dict[str, object] | None, list[int]]:
    data, fds, _, _ = socket.recv_fds(channel, 1 << 20, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


def run(
    channel: socket.socket, selector: selectors.BaseSelector, message: dict[str, object], fds: list[int]
) -> int | None:
    """Runs one command to its end; its pid (not reaped), or None if it could not start."""
    argv = [str(part) for part in message["argv"]]  # type: ignore[attr-defined]
    env = {str(key): str(value) for key, value in message["env"].items()}  # type: ignore[attr-defined]
    cwd = str(message["cwd"])
    send(channel, {"starting": True})
    try:
        os.chdir(cwd)  # inherited: posix_spawn has no working folder of its own (Python 3.11)
        # a vfork and an exec: ~1 ms, against ~3 for a fork of this process and an exec (measured)
        pid = os.posix_spawn(
            program(argv[0], env),
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fds[0], 1),
                (os.POSIX_SPAWN_DUP2, fds[0], 2),
                (os.POSIX_SPAWN_CLOSE, fds[0]),
            ],
            setsid=True,
            # Python ignores these; a command expects them as the shell leaves them
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except OSError as exc:
        send(channel, {"error": exc.strerror or str(exc), "errno": exc.errno or errno.EIO})
        return None
    finally:
        for fd in fds:
            os.close(fd)
    ended = os.pidfd_open(pid)
    try:
        socket.send_fds(channel, [json.dumps({"started": True}).encode()], [ended])
        selector.register(ended, selectors.EVENT_READ)
        try:
            while True:
                ready = {key.fd for key, _ in selector.select()}
                if ended in ready:
                    break
                # the host speaks while the command runs only by closing the socket: it went away
                if channel.recv(1, socket.MSG_PEEK) == b"":
                    os._exit(0)
        finally:
            selector.unregister(ended)
    finally:
        os.close(ended)
    status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # reaped at the next message
    assert status is not None
    code = status.si_status if status.si_code == os.CLD_EXITED else -status.si_status
    send(channel, {"exit": code})
    return pid


def program(name: str, env: dict[str, str]) -> str:
    """Where the command's program is, looked up in its own PATH, as execvpe would."""
    if "/" in name:
        return name
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))


def clean(own: dict[str, tuple[int, int]], made: frozenset[str]) -> str | None:
    """Ends every process but this one and the sandbox's init, and empties the folders of `own` (each
    the tmpfs it was at the start: mount id and device; /dev but for what it held then: `made`).
    Deletes nothing, and says why, if a process outlived SIGKILL (it could still change what is
    mounted) or a folder is no longer that tmpfs (unmounted, another mount over it)."""
    me = os.getpid()
    deadline = time.monotonic() + KILL_WAIT
    while others := [pid for pid, _ in live_processes() if pid not in (1, me)]:
        if time.monotonic() > deadline:
            return f"{len(others)} processes outlived SIGKILL"
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)
    changed = [folder for folder, mount in own.items() if mount_of(folder) != mount]
    if changed:
        return f"{', '.join(changed)}: no longer the tmpfs the sandbox started with"
    for folder, (_, device) in own.items():
        _empty(folder, device, made if folder == DEV else frozenset())
    return None


def mount_of(folder: str) -> tuple[int, int] | None:
    """The mount `folder` resolves to now and its file system (mount id, device); None if unknown.
    A tmpfs unmounted shows what lay beneath it, one mounted over it is another: either differs."""
    try:
        fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with open(f"/proc/self/fdinfo/{fd}") as info:
            mount = next((int(line.split()[1]) for line in info if line.startswith("mnt_id:")), None)
        return None if mount is None else (mount, os.fstat(fd).st_dev)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def live_processes() -> Iterator[tuple[int, int]]:
    """(pid, process group) of each process /proc shows that has not ended (zombies waiting for their
    reaper do not count); none where /proc cannot be read. Standard library only, as this whole file
    is, so `process.py` reads /proc through it too."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue  # exited meanwhile
        # After "pid (comm) ": state, ppid, pgrp. comm may contain spaces and parentheses.
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X"):
            yield int(name), int(fields[2])


def _empty(folder: str, device: int, kept: frozenset[str] = frozenset()) -> None:
    """Removes what `folder` holds on `device` but the names `kept`: a folder bound into it from
    elsewhere (the workspace, under /tmp) is another device and stays untouched, as does the way to it."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name in kept:
            continue
        try:
            if entry.stat(follow_symlinks=False).st_dev != device:
                continue
            if entry.is_dir(follow_symlinks=False):
                _empty(entry.path, device)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue  # a mount point's parent folder (busy), or gone meanwhile


if __name__ == "__main__":
    main()
