"""The shadow repositories hold copies of the user's files: like the history beside them they are
the user's alone (directories 0700, files 0600 or tighter), under any umask, and a checkpoints
folder an earlier build left open is closed again when a runtime takes it up."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from openvaala_lsp.checkpoints.shadow import Limits
from openvaala_lsp.checkpoints.store import CheckpointStore


def open_to_others(root: Path) -> list[str]:
    return [
        f"{path} {stat.filemode(path.lstat().st_mode)}"
        for path in [root, *root.rglob("*")]
        if not path.is_symlink() and path.lstat().st_mode & 0o077
    ]


def test_snapshots_are_written_for_the_user_alone_whatever_the_umask(tmp_path: Path, workspace: Path) -> None:
    (workspace / "secret.txt").write_text("the user's code\n")
    old = os.umask(0o002)  # a umask that leaves files readable by everyone
    try:
        store = CheckpointStore(str(tmp_path / "shadows"), limits=Limits())
        repo = store.repo(str(workspace))
        first = repo.snapshot()
        (workspace / "secret.txt").write_text("changed\n")
        repo.snapshot()
    finally:
        os.umask(old)
    assert first is not None
    assert open_to_others(tmp_path / "shadows") == []


def test_a_checkpoints_folder_left_open_is_closed_when_a_runtime_takes_it_up(tmp_path: Path) -> None:
    root = tmp_path / "shadows"
    (root / "abc").mkdir(parents=True)
    root.chmod(0o755)
    CheckpointStore(str(root), limits=Limits())
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
