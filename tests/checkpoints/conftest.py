from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from openvaala_lsp.checkpoints.shadow import Limits
from openvaala_lsp.checkpoints.store import CheckpointStore


def user_git(workspace: Path, *argv: str) -> str:
    """The user's own git, on their repository (the tests' setup, never the checkpoints)."""
    return subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *argv],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(str(tmp_path / "shadows"), limits=Limits(max_file_bytes=4096, max_files=50))
