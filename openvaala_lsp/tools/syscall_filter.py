"""The seccomp filter of the shell's sandbox: the system calls a build tool never needs and a way out
would, refused with EPERM (a program sees an ordinary refusal, not a crash). Compiled once per
process by libseccomp (through `pyseccomp`), which also refuses calls of another architecture's
table (32-bit `int 0x80`, x32) that would pass a filter written for this one.

Refused: mounting and moving mounts; new namespaces (`unshare`, `setns`, `clone` with a namespace
flag, and `clone3` answered ENOSYS so the C library falls back to `clone`, whose flags the filter can
read); tracing or reading other processes (`ptrace`, `process_vm_*`, `pidfd_getfd`); the kernel
keyring; loading kernel code or filters (`bpf`, modules, `kexec`); opening files by handle (the way
around a bind mount); `userfaultfd`, `perf_event_open`, `io_uring` (kernel attack surface a build
never uses); the clock, swap, reboot, accounting and quotas.
"""

from __future__ import annotations

import errno
import functools
import os

REFUSED = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "add_key",
    "keyctl",
    "request_key",
    "bpf",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "open_by_handle_at",
    "name_to_handle_at",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "uselib",
    "lookup_dcookie",
    "iopl",
    "ioperm",
)
# clone's flags that make a namespace: NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
NAMESPACE_FLAGS = (0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000)


def program() -> bytes | None:
    """The filter as a BPF program (what bubblewrap's `--seccomp` reads), or None where libseccomp
    cannot be loaded (`missing()` says why)."""
    built, _ = _build()
    return built


def missing() -> str:
    return _build()[1]


@functools.cache
def _build() -> tuple[bytes | None, str]:
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, AttributeError) as exc:  # no libseccomp.so.2 on this machine
        return None, f"libseccomp cannot be loaded: {exc}"
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in REFUSED:
        try:
            rules.add_rule(refuse, name)
        except (ValueError, OSError):  # a call this architecture does not have
            continue
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    with os.fdopen(os.memfd_create("openvaala-seccomp"), "w+b") as file:
        rules.export_bpf(file)
        file.seek(0)
        return file.read(), ""
