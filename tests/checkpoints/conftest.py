from __future__ import annotations

from pathlib import Path

import pytest

from openvaala_lsp.checkpoints.shadow import Limits
from openvaala_lsp.checkpoints.store import CheckpointStore


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(str(tmp_path / "shadows"), limits=Limits(max_file_bytes=4096, max_files=50))
