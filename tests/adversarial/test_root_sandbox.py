"""Finding 2: run by root, the sandbox kept every capability (`CapEff` 000001fffeffffff): a command
remounted / read-write and wrote outside, and after it unmounted /tmp, the warm sandbox's cleaner
emptied the machine's /tmp.

Now the sandbox has a user namespace of its own with every capability dropped, and a seccomp filter
refuses mounting, new namespaces, ptrace and the keyring. Each scenario runs in a mount namespace
whose /tmp is a throwaway tmpfs (`in_private_tmp`), so that a regression cannot reach this machine's
/tmp; a marker file there must survive every command, in a sandbox of its own and in a warm one."""

from __future__ import annotations

import json
import textwrap

import pytest
from sandbox_helpers import in_private_tmp, needs_sandbox

pytestmark = needs_sandbox

SCENARIO = textwrap.dedent(
    """
    import asyncio, json, os, shutil, tempfile
    from pathlib import Path
    from sandbox_helpers import context_for, sandboxed
    from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

    COMMANDS = {
        "capabilities": "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status",
        "remount": "mount -o remount,rw / 2>&1; echo escaped > /etc/openvaala-escaped 2>&1; echo done",
        "unmount": "umount /tmp 2>&1; umount -l /tmp 2>&1; umount /proc 2>&1; echo done",
        "unshare": "unshare --user --map-root-user true 2>&1; unshare --mount true 2>&1; echo done",
        "syscalls": (
            "python3 -c 'import ctypes, os; c = ctypes.CDLL(None, use_errno=True)\\n"
            "def call(*a):\\n    r = c.syscall(*a); return os.strerror(ctypes.get_errno()) if r < 0 else str(r)\\n"
            "print(\\"ptrace\\", call(101, 16, 1, 0, 0))\\n"
            "print(\\"keyctl\\", call(250, 0, 0, 0, 0))\\n"
            "print(\\"unshare\\", call(272, 0x10000000))\\n"
            "print(\\"mount\\", call(165, b\\"none\\", b\\"/mnt\\", b\\"tmpfs\\", 0, 0))\\n"
            "print(\\"open_by_handle_at\\", call(304, -100, 0, 0))'"
        ),
    }

    async def main():
        marker = Path("/tmp/belongs-to-the-machine")
        marker.write_text("keep me")
        root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="openvaala-root-"))
        results = {}
        try:
            for kind in ("own", "warm"):
                warm = WarmSandboxes() if kind == "warm" else None
                context = context_for(root, warm=warm)
                if warm is not None:  # until one is warm
                    for _ in range(100):
                        if not (await sandboxed("echo $PPID", context)).startswith("1\\n"):
                            break
                for name, command in COMMANDS.items():
                    results[f"{kind} {name}"] = await sandboxed(command, context)
                    results[f"{kind} {name} marker"] = marker.exists()
                if warm is not None:
                    results["warm again"] = await sandboxed("echo $PPID; ls -A /tmp", context)
                    await warm.close()
                results[f"{kind} escaped"] = os.path.exists("/etc/openvaala-escaped")
        finally:
            shutil.rmtree(root)
        print(json.dumps(results))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    return json.loads(in_private_tmp(SCENARIO).strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["own", "warm"])
def test_no_capability_is_left(results: dict[str, object], kind: str) -> None:
    said = str(results[f"{kind} capabilities"])
    assert said.count("0000000000000000") == 3, said


@pytest.mark.parametrize("kind", ["own", "warm"])
def test_the_root_cannot_be_remounted_writable(results: dict[str, object], kind: str) -> None:
    said = str(results[f"{kind} remount"])
    assert "Read-only file system" in said and "done" in said, said
    assert results[f"{kind} escaped"] is False


@pytest.mark.parametrize("kind", ["own", "warm"])
def test_tmp_cannot_be_unmounted_and_the_machines_tmp_survives(results: dict[str, object], kind: str) -> None:
    said = str(results[f"{kind} unmount"])
    assert "must be superuser" in said or "Operation not permitted" in said or "permission denied" in said, said
    assert all(
        results[f"{kind} {name} marker"] for name in ("capabilities", "remount", "unmount", "unshare", "syscalls")
    )


def test_a_warm_sandbox_still_starts_commands_with_an_empty_tmp(results: dict[str, object]) -> None:
    spawner, listing = str(results["warm again"]).split("\n", 1)
    assert spawner != "1" and listing == "[exit code 0]", (spawner, listing)


@pytest.mark.parametrize("kind", ["own", "warm"])
def test_new_namespaces_ptrace_the_keyring_and_mounting_are_refused(results: dict[str, object], kind: str) -> None:
    unshared = str(results[f"{kind} unshare"])
    assert "Operation not permitted" in unshared and "done" in unshared, unshared
    calls = dict(line.split(" ", 1) for line in str(results[f"{kind} syscalls"]).splitlines()[:5])
    assert calls == {
        "ptrace": "Operation not permitted",
        "keyctl": "Operation not permitted",
        "unshare": "Operation not permitted",
        "mount": "Operation not permitted",
        "open_by_handle_at": "Operation not permitted",
    }, calls
