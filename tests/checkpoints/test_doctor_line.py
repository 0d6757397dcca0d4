"""`openvaala doctor` says whether turns are checkpointed: git found (its version and where), or a
warning saying what does not work without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openvaala_lsp.checkpoints import git
from openvaala_lsp.setup import doctor


def test_with_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git, "_state", git.probe())
    line = doctor.checkpoints_status()
    assert line.startswith("git 2.") and "diffed and reverted" in line


def test_without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(git, "_state", git.probe(path=str(tmp_path)))
    line = doctor.checkpoints_status()
    assert line.startswith("WARNING: git is not installed") and "revertTurn need git" in line


def test_an_old_git_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "git"
    fake.write_text("#!/bin/sh\necho 'git version 2.20.1'\n")
    fake.chmod(0o755)
    state = git.probe(path=str(tmp_path))
    assert not state.usable and "older than 2.26" in state.reason
