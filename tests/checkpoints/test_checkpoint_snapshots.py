"""Snapshots and diffs of a workspace by the shadow repository: what a shell command did to files
(added, changed, removed, moved, binary), what `.gitignore` and the limits leave out (listed), and
that the user's own repository is never touched and nothing it or the workspace names ever runs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from shadow_helpers import user_git

from openvaala_lsp.checkpoints import diffs, git
from openvaala_lsp.checkpoints.shadow import Limits
from openvaala_lsp.checkpoints.store import CheckpointStore
from openvaala_lsp.model import FileChangeKind


def by_path(changes: list, root: Path) -> dict:
    return {os.path.relpath(change.path, root): change for change in changes}


def test_add_update_delete_move_and_binary(store: CheckpointStore, workspace: Path) -> None:
    (workspace / "src" / "main.py").write_text("".join(f"line {n}\n" for n in range(20)))
    (workspace / "old.txt").write_text("moving\nalong\nwith\nme\n")
    (workspace / "gone.txt").write_text("bye\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "src" / "main.py").write_text("".join(f"line {n}\n" for n in range(20)).replace("line 7\n", "seven\n"))
    (workspace / "old.txt").rename(workspace / "src" / "new.txt")
    (workspace / "gone.txt").unlink()
    (workspace / "added.md").write_text("# hi\n")
    (workspace / "image.bin").write_bytes(b"\x89PNG\0\1\2")
    after = repo.snapshot()
    changes = by_path(diffs.diff(repo, before, after), workspace)
    assert set(changes) == {"src/main.py", "src/new.txt", "gone.txt", "added.md", "image.bin"}
    main = changes["src/main.py"]
    assert main.kind is FileChangeKind.UPDATE and (main.additions, main.deletions) == (1, 1)
    assert main.diff is not None and "-line 7\n+seven\n" in main.diff and " line 6\n" in main.diff  # context
    moved = changes["src/new.txt"]
    assert moved.kind is FileChangeKind.MOVE and moved.moved_from == str(workspace / "old.txt")
    assert changes["gone.txt"].kind is FileChangeKind.DELETE and changes["gone.txt"].deletions == 1
    assert changes["added.md"].kind is FileChangeKind.ADD and changes["added.md"].diff == "@@ -0,0 +1 @@\n+# hi\n"
    assert changes["image.bin"].binary is True and changes["image.bin"].diff is None
    assert all(os.path.isabs(change.path) for change in changes.values())


def test_an_unchanged_folder_gives_the_same_snapshot(store: CheckpointStore, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    repo = store.repo(str(workspace))
    first = repo.snapshot()
    assert repo.snapshot() == first
    assert diffs.diff(repo, first, repo.snapshot()) == []


def test_gitignore_is_honoured_and_dot_git_never_taken(store: CheckpointStore, workspace: Path) -> None:
    user_git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_text("object\n")
    (workspace / "run.log").write_text("log\n")
    (workspace / "kept.txt").write_text("kept\n")
    repo = store.repo(str(workspace))
    tree = repo.git("ls-tree", "-r", "--name-only", repo.snapshot().tree).decode().split()
    assert tree == [".gitignore", "kept.txt"]


def test_files_past_the_limits_are_listed_never_silently_left_out(store: CheckpointStore, workspace: Path) -> None:
    (workspace / "small.txt").write_text("small\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "huge.dat").write_bytes(b"x" * 5000)  # the test store's limit is 4096 bytes
    after = repo.snapshot()
    assert [(s.path, "larger than the limit of 4.0 KiB" in s.why) for s in after.skipped] == [("huge.dat", True)]
    [change] = diffs.diff(repo, before, after)
    assert change.kind is FileChangeKind.ADD and change.path == str(workspace / "huge.dat")
    assert change.skipped is not None and change.skipped[0].path == str(workspace / "huge.dat")
    # left out again, unchanged: no change to report
    assert diffs.diff(repo, after, repo.snapshot()) == []
    # a tracked file that grows past the limit leaves the snapshot and says so
    (workspace / "small.txt").write_bytes(b"y" * 5000)
    grown = repo.snapshot()
    assert {s.path for s in grown.skipped} == {"huge.dat", "small.txt"}
    [grew] = diffs.diff(repo, after, grown)
    assert grew.kind is FileChangeKind.UPDATE and grew.skipped is not None


def test_the_file_count_limit_lists_the_files_left_out(store: CheckpointStore, workspace: Path) -> None:
    for n in range(60):  # the test store holds at most 50
        (workspace / f"f{n:02}.txt").write_text(f"{n}\n")
    snapshot = store.repo(str(workspace)).snapshot()
    assert len(snapshot.skipped) == 10 + 0
    assert all("more than 50 files" in s.why for s in snapshot.skipped)
    assert [s.path for s in snapshot.skipped] == [f"f{n:02}.txt" for n in range(50, 60)]


def test_unreadable_files_are_listed(store: CheckpointStore, workspace: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    secret = workspace / "secret.txt"
    secret.write_text("s\n")
    secret.chmod(0)
    snapshot = store.repo(str(workspace)).snapshot()
    assert [s.path for s in snapshot.skipped] == ["secret.txt"]


def _digest(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            found[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_the_users_repository_is_never_touched_and_nothing_it_names_runs(
    store: CheckpointStore, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile workspace: its .git/config names a clean filter, an fsmonitor and a hooks path, its
    .gitattributes applies the filter (and a diff driver and line ending conversion) to every file,
    hooks are planted; the user's global config names filters too, and the runtime inherited a
    GIT_DIR and GIT_INDEX_FILE pointing at the user's repository. None of it may run or be written."""
    marker = tmp_path / "ran"
    run = f"sh -c 'echo ran >> {marker}'"
    user_git(workspace, "init", "-q")
    (workspace / "tracked.txt").write_text("one\r\ntwo\r\n")
    user_git(workspace, "add", "tracked.txt")
    user_git(workspace, "commit", "-q", "-m", "first")
    with open(workspace / ".git" / "config", "a") as config:
        config.write(
            f'[filter "evil"]\n\tclean = {run}; cat\n\tsmudge = {run}; cat\n\trequired = true\n'
            f'[diff "evil"]\n\ttextconv = {run}; cat\n\tcommand = {run}\n'
            f"[core]\n\tfsmonitor = {marker}.fsmonitor\n\thooksPath = .git/hooks\n"
        )
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil text eol=lf\n")
    hooks = workspace / ".git" / "hooks"
    for name in (
        "pre-commit",
        "post-commit",
        "post-index-change",
        "post-checkout",
        "pre-auto-gc",
        "fsmonitor-watchman",
    ):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    fsmonitor = Path(f"{marker}.fsmonitor")
    fsmonitor.write_text(f"#!/bin/sh\necho fsmonitor >> {marker}\n")
    fsmonitor.chmod(0o755)
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text(f'[filter "evil"]\n\tclean = {run}; cat\n[core]\n\tfsmonitor = {fsmonitor}\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(workspace / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(workspace / ".git" / "index"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    users = _digest(workspace / ".git")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    (workspace / "tracked.txt").write_text("one\r\n2\r\n")
    (workspace / "new.txt").write_text("new\n")
    after = repo.snapshot()
    changes = by_path(diffs.diff(repo, before, after), workspace)
    assert set(changes) == {"tracked.txt", "new.txt"}
    assert changes["tracked.txt"].diff is not None and "+2\r\n" in changes["tracked.txt"].diff  # bytes as they are
    # stored byte for byte: no filter, no line ending conversion
    blob = repo.git("cat-file", "blob", f"{after.tree}:tracked.txt")
    assert blob == b"one\r\n2\r\n"
    assert not marker.exists(), marker.read_text()
    assert _digest(workspace / ".git") == users
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert user_git(workspace, "status", "--porcelain", "-uno").strip() == "M tracked.txt"


def test_git_missing_is_reported(tmp_path: Path) -> None:
    state = git.probe(path=str(tmp_path))  # a PATH with no git on it
    assert not state.usable and "git is not installed" in state.reason
    store = CheckpointStore(str(tmp_path / "shadows"), state=state)
    assert not store.usable and store.repos_of("conv_x") == []
    with pytest.raises(RuntimeError, match="checkpoints are not available"):
        store.repo(str(tmp_path))


def test_a_nested_repository_is_listed_not_taken(store: CheckpointStore, workspace: Path) -> None:
    vendored = workspace / "vendor" / "lib"
    vendored.mkdir(parents=True)
    user_git(vendored, "init", "-q")
    (vendored / "x.c").write_text("int x;\n")
    (workspace / "top.txt").write_text("top\n")
    repo = store.repo(str(workspace))
    snapshot = repo.snapshot()
    assert [s.path for s in snapshot.skipped] == ["vendor/lib"]
    assert repo.git("ls-tree", "-r", "--name-only", snapshot.tree).decode().split() == ["top.txt"]


def test_large_diffs_are_cut_with_a_marker(store: CheckpointStore, workspace: Path) -> None:
    big = workspace / "big.txt"
    big.write_text("")
    repo = store.repo(str(workspace))
    repo.limits = type(repo.limits)(max_file_bytes=10 * 1024 * 1024)
    before = repo.snapshot()
    big.write_text("".join(f"line {n}\n" for n in range(5000)))
    [change] = diffs.diff(repo, before, repo.snapshot())
    assert change.additions == 5000 and change.diff is not None
    assert "[diff cut:" in change.diff.splitlines()[-1]
    assert change.diff.count("\n") < 2100


def test_odd_names_a_type_change_and_a_mode_change_each_get_their_own_diff(
    store: CheckpointStore, workspace: Path
) -> None:
    """Names git quotes, and names whose header `a/P b/P` could be split elsewhere: each file's diff
    is its own."""
    names = ['we"ird', "tab\there", "new\nline", "ünïcode b/x b/y.txt", "sp ace b/sp ace"]
    for name in names:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("first\nsecond\nthird\n")
    (workspace / "link").write_text("a file\n")
    (workspace / "run").write_text("echo\n")
    repo = store.repo(str(workspace))
    before = repo.snapshot()
    for name in names:
        (workspace / name).write_text(f"first\nsecond\nthird\n{name!r}\n")
    (workspace / "link").unlink()
    (workspace / "link").symlink_to("run")
    (workspace / "run").chmod(0o755)
    (workspace / 'we"ird').rename(workspace / 're named"')
    changes = by_path(diffs.diff(repo, before, repo.snapshot()), workspace)
    assert set(changes) == {*names[1:], 're named"', "link", "run"}
    for name in names[1:]:
        assert changes[name].diff == f"@@ -1,3 +1,4 @@\n first\n second\n third\n+{name!r}\n", name
    moved = changes['re named"']
    assert (
        moved.kind is FileChangeKind.MOVE and moved.diff == f"@@ -1,3 +1,4 @@\n first\n second\n third\n+{names[0]!r}\n"
    )
    # a file made a symlink: the symlink's side is shown
    assert changes["link"].kind is FileChangeKind.UPDATE
    assert changes["link"].diff == "@@ -0,0 +1 @@\n+run\n\\ No newline at end of file\n"
    assert changes["run"].kind is FileChangeKind.UPDATE and changes["run"].diff == ""  # made executable


def test_a_snapshot_reads_a_bounded_amount_of_new_files_the_rest_comes_later(tmp_path: Path, workspace: Path) -> None:
    store = CheckpointStore(str(tmp_path / "bounded"), limits=Limits(max_file_bytes=4096, max_new_bytes=2500))
    for name in "abc":
        (workspace / f"{name}.txt").write_text(name * 1000)
    repo = store.repo(str(workspace))
    first = repo.snapshot()
    assert [(s.path, "of new files one snapshot reads" in s.why) for s in first.skipped] == [("c.txt", True)]
    second = repo.snapshot()
    assert second.skipped == ()
    assert repo.git("ls-tree", "--name-only", second.tree).decode().split() == ["a.txt", "b.txt", "c.txt"]
