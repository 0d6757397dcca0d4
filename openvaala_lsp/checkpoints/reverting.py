"""Planning a revert in one folder: which files go back to what, and which of them someone changed
since the agent last did (a conflict, never overwritten unasked).

A revert undoes a run of turns, each known by its checkpoints before and after it. A path goes back
to what it held before the first of those turns that changed it, so a change the user made between
turns, before the agent touched the file, survives; and it must still hold what the last of those
turns left in it, else the user (or something else) changed it since: a conflict."""

from __future__ import annotations

import os

import attrs

from openvaala_lsp import file_diff
from openvaala_lsp.checkpoints import restore
from openvaala_lsp.checkpoints.shadow import Checkpoint, ShadowRepo
from openvaala_lsp.model import FileChange, FileChangeKind, SkippedFile


@attrs.frozen(kw_only=True)
class Span:
    """One turn's checkpoints (commits) before and after it; `ended`: where it ended among the spans
    (a sub-agent's turn starts after its parent's and ends before it)."""

    turn_id: str
    before: str
    after: str
    ended: int = 0


@attrs.define(kw_only=True)
class Plan:
    """What a revert writes (path -> entry, None: removed), and the paths changed since."""

    writes: dict[str, restore.Entry | None] = attrs.Factory(dict)
    conflicts: list[FileChange] = attrs.Factory(list)


def changed_paths(repo: ShadowRepo, old_tree: str, new_tree: str) -> list[str]:
    """The paths that differ between two trees (a move: both of its paths)."""
    if old_tree == new_tree:
        return []
    out = repo.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", old_tree, new_tree)
    return [os.fsdecode(name) for name in out.split(b"\0") if name]


def plan(repo: ShadowRepo, spans: list[Span], now: Checkpoint) -> Plan:
    """How to undo `spans` (in the order the turns started) in the folder as it is `now`."""
    checkpoints = {commit: repo.checkpoint(commit) for span in spans for commit in (span.before, span.after)}
    first: dict[str, Span] = {}
    last: dict[str, Span] = {}
    for span in spans:
        for path in changed_paths(repo, checkpoints[span.before].tree, checkpoints[span.after].tree):
            first.setdefault(path, span)
            if path not in last or span.ended >= last[path].ended:
                last[path] = span
    trees: dict[str, dict[str, restore.Entry]] = {}

    def entries(tree: str) -> dict[str, restore.Entry]:
        if tree not in trees:
            trees[tree] = restore.tree_entries(repo, tree)
        return trees[tree]

    current = entries(now.tree)
    now_skipped = {entry.path: entry for entry in now.skipped}
    result = Plan()
    conflicted: list[tuple[str, restore.Entry | None, restore.Entry | None]] = []
    for path in sorted(first):
        target = entries(checkpoints[first[path].before].tree).get(path)
        expected = entries(checkpoints[last[path].after].tree).get(path)
        if path in now_skipped:  # too large to see now: whatever it holds is not what the agent left
            result.conflicts.append(_unseen(repo, path, now_skipped[path].why))
            result.writes[path] = target
            continue
        held = current.get(path)
        if held != expected:
            conflicted.append((path, expected, held))
        if held != target:
            result.writes[path] = target
    result.conflicts += _conflicts(repo, conflicted)
    return result


def _unseen(repo: ShadowRepo, path: str, why: str) -> FileChange:
    where = os.path.join(repo.work_tree, path)
    return FileChange(path=where, kind=FileChangeKind.UPDATE, skipped=[SkippedFile(path=where, why=why)])


def _conflicts(
    repo: ShadowRepo, conflicted: list[tuple[str, restore.Entry | None, restore.Entry | None]]
) -> list[FileChange]:
    """What changed in each conflicting file since the agent left it: its diff from then to now."""
    contents = restore.blobs(repo, [e.oid for _, *pair in conflicted for e in pair if e is not None])
    changes = []
    for path, expected, held in conflicted:
        where = os.path.join(repo.work_tree, path)
        before = contents[expected.oid] if expected is not None else None
        after = contents[held.oid] if held is not None else None
        change = file_diff.change_between(where, before, after)
        if change is None:  # the same bytes, another mode (made executable)
            change = FileChange(path=where, kind=FileChangeKind.UPDATE, diff="")
        changes.append(change)
    return changes


def apply(repo: ShadowRepo, writes: dict[str, restore.Entry | None]) -> None:
    """Writes the plan into the folder."""
    contents = restore.blobs(repo, [entry.oid for entry in writes.values() if entry is not None])
    restore.apply(repo.work_tree, writes, contents)
