"""The host's garbage collector, off through the start, comes back once (host/server.py)."""

from __future__ import annotations

import subprocess
import sys

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
