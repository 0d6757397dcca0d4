"""Finding 6: the sandbox shared the machine's SysV IPC (no IPC namespace): a command could list and
attach the shared memory of the user's other programs. Now it has IPC and UTS namespaces of its own,
and, with the network allowed (the machine's network namespace, where the machine's abstract Unix
sockets live), it cannot connect to an abstract socket made outside it."""

from __future__ import annotations

import ctypes
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import Machine, context_for, machine, needs_sandbox, sandboxed

from openvaala_lsp.definitions import Sandbox
from openvaala_lsp.tools.warm_sandbox import WarmSandboxes

pytestmark = needs_sandbox
__all__ = ["machine"]

IPC_CREAT, IPC_RMID = 0o1000, 0
KEY = 0x6F76_6131  # a SysV key of this test's own


@pytest.fixture
def shared_memory() -> Iterator[int]:
    """A SysV shared memory segment of the machine, holding a secret."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    assert segment >= 0, os.strerror(ctypes.get_errno())
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"the machine's secret\0", 21)
    libc.shmdt(ctypes.c_void_p(address))
    try:
        yield segment
    finally:
        libc.shmctl(segment, IPC_RMID, None)


READ_SEGMENT = (
    "python3 -c 'import ctypes, os; c = ctypes.CDLL(None, use_errno=True); c.shmat.restype = ctypes.c_void_p\n"
    f"s = c.shmget({KEY}, 0, 0)\n"
    'print("segment", s, os.strerror(ctypes.get_errno()) if s < 0 else ctypes.string_at(c.shmat(s, None, 0)))\''
)


async def test_the_machines_shared_memory_is_not_there(
    machine: Machine, shared_memory: int, warm: WarmSandboxes | None
) -> None:
    context = context_for(machine.workspace, warm=warm)
    for _ in range(3):  # the first command runs in a sandbox of its own, later ones in a warm one
        said = await sandboxed(f"ipcs -m; {READ_SEGMENT}", context)
        assert "secret" not in said and f"{shared_memory}" not in said.split("segment")[0], said
        assert "segment -1 No such file or directory" in said, said


async def test_its_host_name_is_its_own(machine: Machine, warm: WarmSandboxes | None) -> None:
    said = await sandboxed(
        "hostname sandboxed 2>&1; cat /proc/sys/kernel/hostname", context_for(machine.workspace, warm=warm)
    )
    assert "sandboxed\n" not in said.split("\n", 1)[-1]
    assert socket.gethostname() != "sandboxed"


@pytest.fixture
def abstract_socket() -> Iterator[str]:
    """A listening abstract Unix socket of the machine (no file: a network namespace holds it)."""
    name = f"openvaala-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen(4)
    try:
        yield name
    finally:
        server.close()


async def test_abstract_sockets_of_the_machine_are_out_of_reach_even_with_the_network(
    machine: Machine, abstract_socket: str, warm: WarmSandboxes | None
) -> None:
    connect = (
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX)\n"
        f'try: s.connect("\\0{abstract_socket}"); print("CONNECTED")\n'
        'except OSError as e: print("refused:", e)\''
    )
    for network in (False, True):
        context = context_for(machine.workspace, Sandbox(network=network), warm=warm)
        for _ in range(3):
            said = await sandboxed(connect, context)
            assert said.startswith("refused:"), (network, said)


def test_the_fixture_socket_is_reachable_from_here(abstract_socket: str, tmp_path: Path) -> None:
    client = socket.socket(socket.AF_UNIX)
    client.connect("\0" + abstract_socket)  # what makes the refusals above mean something
    client.close()
