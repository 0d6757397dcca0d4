"""What the checkpoint tests share: the user's own git, run as the user would."""

from __future__ import annotations

import subprocess
from pathlib import Path


def user_git(workspace: Path, *argv: str) -> str:
    """The user's own git, on their repository (the tests' setup, never the checkpoints)."""
    return subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *argv],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
