"""An idle host gives the memory a burst of work left free back to the system, and its garbage
collector, off through the start, comes back once (host/server.py)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

BURST = """
import sys
from openvaala_lsp.host.server import return_free_memory

def resident_mib():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024

blocks = [bytes(100_000) for _ in range(600)]  # ~60 MB from the C heap, under malloc's mmap threshold
kept = blocks[::20]  # what stays in use keeps the freed holes from shrinking the heap by themselves
del blocks
freed = resident_mib()
return_free_memory()
print(freed, resident_mib())
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_trim"), reason="a C library without malloc_trim")
def test_the_pages_a_burst_left_free_go_back_to_the_system() -> None:
    done = subprocess.run([sys.executable, "-c", BURST], capture_output=True, text=True, check=True)
    freed, trimmed = map(int, done.stdout.split())
    assert trimmed < freed - 30, (freed, trimmed)  # of the ~57 MB freed, most was still resident


START = """
import gc, weakref
gc.disable()  # as host.main.run does first
from openvaala_lsp.host.server import collect_start_garbage

class Draft:
    pass

draft = Draft()
draft.me = draft  # a cycle: only the collector frees it
gone = weakref.ref(draft)
del draft
waiting = gone() is not None
collected = collect_start_garbage()
print(waiting, gone() is None, collected >= 1, gc.isenabled(), gc.get_freeze_count() > 1000)
"""


def test_the_collector_off_through_the_start_frees_its_cycles_and_freezes_the_rest() -> None:
    done = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"] * 5
