"""Run inside the sandbox as `python -I -S -c <this file> PROGRAM ARGS...` when the network is
allowed: it puts itself in a Landlock domain scoped for abstract Unix sockets and signals, then
becomes PROGRAM, which keeps the domain, as does everything it starts.

Why: with the network allowed, the sandbox shares the machine's network namespace, where the
machine's abstract Unix sockets live (no file to hide them behind: a desktop's X server and D-Bus,
container runtimes' shims). A scoped domain may connect only to abstract sockets made inside it
(Landlock ABI 6, Linux 6.12). Where the kernel has no such scoping, `scoping_supported()` says so and
the runtime does not use this file. Standard library only (it runs with -I -S, before any import
path of the package exists inside the sandbox).
"""

from __future__ import annotations

import ctypes
import os
import sys

CREATE_RULESET, RESTRICT_SELF = 444, 446  # the same number on every architecture
CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
SCOPING_ABI = 6
PR_SET_NO_NEW_PRIVS = 38


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def abi() -> int:
    """The kernel's Landlock ABI version (0 where Landlock is absent or off)."""
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def scoping_supported() -> bool:
    return abi() >= SCOPING_ABI


def scope() -> None:
    """Scopes this process (and what it starts) to its own abstract sockets and signals; OSError if
    the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    ruleset = libc.syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def main() -> None:
    try:
        scope()  # fails closed: a command never runs unscoped where the runtime asked for the scope
    except OSError as exc:
        sys.stderr.write(f"openvaala sandbox: cannot scope the command: {exc}\n")
        sys.exit(126)
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
