"""A real OpenSSH server for the ssh executor's tests: `/usr/sbin/sshd -D` as the current user (root
or not) on a free loopback port, with a throwaway host key and user key, public keys only, no PAM.

It can be killed with every connection it serves (`kill`: the master and each process below it, as
a host that goes down) and started again on the same port with the same keys (`start`)."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
START_TIMEOUT = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)], check=True)


def _children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found.setdefault(int(fields[1]), []).append(int(entry))
    return found


def require_sshd() -> None:
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        if os.environ.get("OPENVAALA_REQUIRE_SSHD") == "1":
            pytest.fail(f"{SSHD} is missing: install Debian's openssh-server (scripts/test.sh does)")
        pytest.skip(f"{SSHD} is missing (Debian's openssh-server; scripts/test.sh installs it)")


class Sshd:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.host_key = directory / "host_key"
        self.user_key = directory / "user_key"
        _keygen(self.host_key)
        _keygen(self.user_key)
        (directory / "authorized_keys").write_text(Path(f"{self.user_key}.pub").read_text())
        self.port = _free_port()
        self.user = getpass.getuser()
        self.config = directory / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                    f"PidFile {directory / 'sshd.pid'}",
                    "UsePAM no",
                    "StrictModes no",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "AllowTcpForwarding no",
                    "AllowAgentForwarding no",
                    "X11Forwarding no",
                    "Subsystem sftp internal-sftp",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        self.known_hosts = directory / "known_hosts"
        public = Path(f"{self.host_key}.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation directory
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.config), "-p", str(self.port)],
            stdin=subprocess.DEVNULL,
            stderr=open(self.directory / "sshd.log", "ab"),
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.directory / 'sshd.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen in time")

    def kill(self) -> None:
        """SIGKILL to sshd and every process below it: its connections, and what they run."""
        if self.process is None:
            return
        children = _children()
        tree, pending = [], [self.process.pid]
        while pending:
            pid = pending.pop()
            tree.append(pid)
            pending += children.get(pid, [])
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self.process = None

    def definition(self, executor_id: str, roots: list[str], **extra: object) -> dict[str, object]:
        """The executor definition (wire form) that reaches this server."""
        return {
            "id": executor_id,
            "kind": "ssh",
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "keyFile": str(self.user_key),
            "knownHosts": str(self.known_hosts),
            "roots": roots,
            **extra,
        }
