"""The adversarial tests: one module per finding of the sandbox issue, each written as the attack it
stops. They reuse the in-process runtime harness of tests/runtime."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "runtime"))
