"""The adversarial tests again, as a user who is not root: CI runs as root, and a sandbox that holds
for root may still fail for everyone else (or the other way round: user namespaces are made
differently, capabilities are dropped by another path).

Run as root only: the test makes a throwaway user and runs the fast adversarial modules and the
sandbox's own tests as that user, in a mount namespace of their own where the interpreter and this
checkout are reachable (a checkout or a Python under /root, mode 0700, is not, for another user)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

USER = "openvaala-adversary"
CHECKOUT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("unshare") is None,
    reason="makes a user and a mount namespace: root with useradd and unshare only",
)

# Runs as root in a new mount namespace: makes every folder on the way to the interpreter, the
# virtual environment and the checkout passable for the user (an empty tmpfs over a closed folder,
# with just those paths bound back into it), then becomes the user and runs pytest.
ENTER = textwrap.dedent(
    """
    import ctypes, os, stat, sys
    libc = ctypes.CDLL(None, use_errno=True)
    MS_BIND, MS_REC = 4096, 16384

    def mount(source, target, kind=None, flags=0, data=None):
        if libc.mount(source.encode(), target.encode(), kind.encode() if kind else None, flags,
                      data.encode() if data else None) != 0:
            raise OSError(ctypes.get_errno(), f"mount {source} {target}: {os.strerror(ctypes.get_errno())}")

    uid, gid, stash, needed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4].split(":")
    opened = {}
    for path in needed:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if folder in opened:
                break
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                opened[folder] = [p for p in needed if p.startswith(folder + "/")]
                break
    for index, (folder, inside) in enumerate(opened.items()):
        kept = os.path.join(stash, str(index))
        os.mkdir(kept)
        mount(folder, kept, flags=MS_BIND | MS_REC)
        mount("tmpfs", folder, "tmpfs", 0, "mode=0755")
        for path in inside:
            os.makedirs(path, exist_ok=True)
            mount(os.path.join(kept, os.path.relpath(path, folder)), path, flags=MS_BIND | MS_REC)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.execv(sys.argv[5], sys.argv[5:])
    """
)


@pytest.fixture(scope="module")
def adversary() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(USER)


def test_the_adversarial_tests_hold_for_a_user_who_is_not_root(adversary: pwd.struct_passwd) -> None:
    stash = tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-stash-")
    home = tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-adversary-home-")
    os.chown(home, adversary.pw_uid, adversary.pw_gid)
    needed = [os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), str(CHECKOUT)]
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENVAALA_HOME": os.path.join(home, "openvaala"),
    }
    tests = ["tests/adversarial", "tests/test_sandbox.py"]
    try:
        done = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                sys.executable,
                "-c",
                ENTER,
                str(adversary.pw_uid),
                str(adversary.pw_gid),
                stash,
                ":".join(needed),
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-m",
                "not e2e",
                *tests,
            ],
            cwd=CHECKOUT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        shutil.rmtree(stash, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-6000:]
    summary = said.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary, said[-3000:]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 40 and "no sandbox here" not in said, said[-3000:]  # the sandbox ran, for each test
