"""The runtime host: win `host.lock`, then load the runtime and serve. A front becomes one by forking
(`front.connect.spawn_host` calls `run`); `python -m openvaala_lsp.host [--ready-fd N]` starts one by
hand. Either way the process is named `openvaala-host` (`ps -C openvaala-host`, `pgrep openvaala-host`).

The lock is taken before the runtime and DuckDB are imported (~0.1 s), so a host that loses a start race
exits within milliseconds. The kernel drops the lock on any death, SIGKILL included.
"""

from __future__ import annotations

import fcntl
import gc
import os
import sys

from openvaala_lsp.rundir import UnsafeRunDir, ensure_private, run_dir

EXIT_LOCKED = 3
PROCESS_NAME = b"openvaala-host"  # what ps, top and pgrep show; 15 bytes at most


def main(argv: list[str] | None = None) -> int:
    import argparse  # here only: a front forks straight into `run`

    parser = argparse.ArgumentParser(prog="python -m openvaala_lsp.host", description=__doc__)
    parser.add_argument("--ready-fd", type=int, help="write b'R' to this fd once listening, then close it")
    parser.add_argument(
        "--write-generated-code",
        action="store_true",
        help="write the cache of the code attrs and cattrs generate for a host's start, then exit "
        "(a host writes it itself unless PYTHONDONTWRITEBYTECODE is set)",
    )
    options = parser.parse_args(argv)
    if options.write_generated_code:
        return write_generated_code()
    return run(options.ready_fd)


def write_generated_code() -> int:
    """Caches the code generated for the classes a host makes before its first answers (`initialize`,
    the conversations' list), as `python -m compileall` writes .pyc files: no more, since what the
    cache holds beyond them is loaded and freed for nothing."""
    from openvaala_lsp import generated_code

    generated_code.install()
    import openvaala_lsp.host.server
    import openvaala_lsp.protocol.api.conversations
    import openvaala_lsp.storage.duckdb_store  # noqa: F401

    written = generated_code.finish(write=True)
    sys.stdout.write(f"{generated_code.cache_file}: {'written' if written else 'up to date'}\n")
    return 0


def run(ready_fd: int | None) -> int:
    """The host's life; `ready_fd` gets b"R" once it listens (and is closed)."""
    # the start makes ~30k objects the collector tracks, most of them living as long as the host, and
    # it walked them over and over while they were made: 10-19 ms of a first start's imports
    # (measured). It is off until the start is behind (`server.collect_start_garbage`)
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
    _start_early()
    try:
        from openvaala_lsp.host.server import serve

        return serve(directory, ready_fd)
    finally:
        _remove_pid(directory.pid_file)
        os.close(lock)


def _start_early() -> None:
    """What can run while the runtime imports: the database open and the sandbox probe."""
    from openvaala_lsp import paths
    from openvaala_lsp.storage import early

    database = paths.database_path()
    try:
        paths.ensure_private_dir(database.parent)  # the history is the user's alone
    except OSError:
        return  # start_runtime reports it
    early.start(str(database), _open_database)
    # after the open has begun, before the first attrs class: the code attrs and cattrs generate for
    # the start comes from the cache until the start is behind (`server.collect_start_garbage`)
    from openvaala_lsp import generated_code

    generated_code.install()
    from openvaala_lsp.tools import sandbox  # its imports (attrs) need not hold up the open

    sandbox.probe_soon()


def _open_database(path: str) -> object:
    # DuckDB's engine loads in this thread (a first start copies the database's template meanwhile)
    from openvaala_lsp.storage.opening import connect_file

    return connect_file(path)


def _name_process(name: bytes) -> None:
    """A forked host would otherwise look like one more front in ps and top."""
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
