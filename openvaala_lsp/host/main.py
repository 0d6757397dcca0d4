"""The runtime host: win `host.lock`, then load the runtime and serve. A front starts one as
`python -m openvaala_lsp.host --ready-fd N` (`front.connect.spawn_host`), named `openvaala-host`
(`ps -C openvaala-host`, `pgrep openvaala-host`).

The lock is taken before the runtime and DuckDB are imported (~0.1 s), so a host that loses a start race
exits within milliseconds. The kernel drops the lock on any death, SIGKILL included.
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import os
import sys

from openvaala_lsp.rundir import UnsafeRunDir, ensure_private, run_dir

EXIT_LOCKED = 3
PROCESS_NAME = b"openvaala-host"  # what ps, top and pgrep show; 15 bytes at most


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openvaala_lsp.host", description=__doc__)
    parser.add_argument("--ready-fd", type=int, help="write b'R' to this fd once listening, then close it")
    options = parser.parse_args(argv)
    return run(options.ready_fd)


def run(ready_fd: int | None) -> int:
    """The host's life; `ready_fd` gets b"R" once it listens (and is closed)."""
    # A start-up trick that stays: the start makes tens of thousands of objects the collector tracks
    # (lsprotocol's and ours), most living as long as the host, and it would walk them over and over
    # while they are made. Of the tricks measured, this one and httpx kept off the start save the most
    # of a first-ever start's first answer, which would miss its budget without them. Off until the
    # start is behind (`server.collect_start_garbage`).
    gc.disable()
    _name_process(PROCESS_NAME)
    directory = run_dir()
    try:
        ensure_private(directory)
    except UnsafeRunDir as exc:
        sys.stderr.write(f"openvaala host: {exc}" + "\n")
        return 1
    lock = os.open(directory.host_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.stderr.write(f"openvaala host: another host holds {directory.host_lock}; exiting" + "\n")
        return EXIT_LOCKED
    _write_pid(directory.pid_file)
    try:
        from openvaala_lsp.host.server import serve

        return serve(directory, ready_fd)
    finally:
        _remove_pid(directory.pid_file)
        os.close(lock)


def _name_process(name: bytes) -> None:
    """ps and top would otherwise show one more `python`."""
    try:
        with open("/proc/self/comm", "wb") as comm:
            comm.write(name)
    except OSError:
        pass  # not Linux, or no /proc: the name is cosmetic


def _write_pid(path: str) -> None:
    from openvaala_lsp.paths import write_private

    write_private(path, f"{os.getpid()}\n")


def _remove_pid(path: str) -> None:
    try:
        with open(path) as pid_file:
            if pid_file.read().strip() == str(os.getpid()):
                os.unlink(path)
    except FileNotFoundError:
        pass
