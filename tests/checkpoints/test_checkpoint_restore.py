"""Writing a snapshot's files back, on hostile ground: a symlink planted where a directory was never
leads a write or a removal out of the folder, and a path that could leave it is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openvaala_lsp.checkpoints import restore
from openvaala_lsp.checkpoints.store import CheckpointStore


def revert(repo, old_tree: str, new_tree: str) -> None:
    old, new = restore.tree_entries(repo, old_tree), restore.tree_entries(repo, new_tree)
    plan = {path: old.get(path) for path in set(old) | set(new) if old.get(path) != new.get(path)}
    restore.apply(repo.work_tree, plan, restore.blobs(repo, [e.oid for e in plan.values() if e is not None]))


def test_restores_contents_modes_symlinks_and_removes_what_was_added(store: CheckpointStore, workspace: Path) -> None:
    (workspace / "src" / "pkg" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (workspace / "src" / "pkg" / "run.sh").chmod(0o755)
    (workspace / "link").symlink_to("src/pkg/run.sh")
    (workspace / "doc.txt").write_text("original\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "doc.txt").write_text("changed\n")
    (workspace / "src" / "pkg" / "run.sh").unlink()
    (workspace / "link").unlink()
    (workspace / "extra" / "deep").mkdir(parents=True)
    (workspace / "extra" / "deep" / "new.txt").write_text("new\n")
    after = repo.snapshot()
    revert(repo, before.tree, after.tree)
    assert (workspace / "doc.txt").read_text() == "original\n"
    assert os.access(workspace / "src" / "pkg" / "run.sh", os.X_OK)
    assert os.readlink(workspace / "link") == "src/pkg/run.sh"
    assert not (workspace / "extra").exists()  # the directories the removal emptied go too
    assert repo.snapshot().tree == before.tree


def test_a_symlink_planted_in_place_of_a_directory_is_never_written_through(
    store: CheckpointStore, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me\n")
    (workspace / "dir").mkdir()
    (workspace / "dir" / "victim.txt").write_text("inside\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "dir" / "victim.txt").unlink()
    (workspace / "dir").rmdir()
    after = repo.snapshot()
    os.symlink(outside, workspace / "dir")  # planted after the last snapshot
    revert(repo, before.tree, after.tree)
    assert (outside / "victim.txt").read_text() == "keep me\n"
    assert not (workspace / "dir").is_symlink() and (workspace / "dir" / "victim.txt").read_text() == "inside\n"


def test_a_removal_through_a_planted_symlink_leaves_the_outside_alone(
    store: CheckpointStore, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "added.txt").write_text("not the agent's\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "dir").mkdir()
    (workspace / "dir" / "added.txt").write_text("agent's\n")
    after = repo.snapshot()
    (workspace / "dir" / "added.txt").unlink()
    (workspace / "dir").rmdir()
    os.symlink(outside, workspace / "dir")
    revert(repo, before.tree, after.tree)
    assert (outside / "added.txt").read_text() == "not the agent's\n"


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", "a/../../x", ".git/config", "sub/.git/hooks/x"])
def test_paths_that_could_leave_the_folder_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(restore.RestoreFailed, match="refusing"):
        restore.apply(str(workspace), {path: restore.Entry(mode="100644", oid="0" * 40)}, {"0" * 40: b"x"})


def test_check_out_into_another_directory(store: CheckpointStore, workspace: Path, tmp_path: Path) -> None:
    (workspace / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (workspace / "tool").write_text("#!/bin/sh\n")
    (workspace / "tool").chmod(0o755)
    (workspace / "alias").symlink_to("tool")
    repo = store.repo(str(workspace))
    snapshot = repo.snapshot()
    target = tmp_path / "copy"
    target.mkdir()
    assert restore.check_out(repo, snapshot.tree, str(target)) == 3
    assert (target / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert os.access(target / "tool", os.X_OK) and os.readlink(target / "alias") == "tool"
