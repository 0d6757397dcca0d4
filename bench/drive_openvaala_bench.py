"""The shared openvaala driver (`../shared/bench-peers/drive_openvaala.py`), with conversation titles
off: the fake model answers every request with the whole benchmark stream, so each turn's title call
(one tiny request in real use, off the turn's critical path) would stream 2000 deltas more and skew
CPU and timings against a peer that makes no such call. Same arguments as the shared driver."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

PEERS = Path(os.environ.get("OPENVAALA_PEERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "bench-peers"))
sys.path.insert(0, str(PEERS))

import drive_openvaala  # noqa: E402

_shared_definitions = drive_openvaala.definitions


def definitions(base_url: str, api: str) -> dict[str, Any]:
    result: dict[str, Any] = _shared_definitions(base_url, api)
    for agent in result["agents"]:
        agent["titles"] = False
    return result


drive_openvaala.definitions = definitions

if __name__ == "__main__":
    drive_openvaala.main()
