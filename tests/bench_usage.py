"""`bench/usage_data.py` for the tests: a history of N model calls written straight into a DuckDB file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("usage_data", Path(__file__).parent.parent / "bench/usage_data.py")
assert _spec is not None and _spec.loader is not None
usage_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(usage_data)
