"""What changed between two snapshots of a folder, as `FileChange`s: git finds the changed paths,
renames (`move`), line counts and the unified diffs (three lines of context), which `file_diff`
cuts the way it cuts the file tools' (and the answer's diffs together are bounded too). Binary
files are named, not diffed. A file a
snapshot left out (`shadow.Skipped`) is listed as changed only if it did (its size or change time
differs), with `skipped` saying why its diff is missing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

import attrs

from openvaala_lsp import file_diff
from openvaala_lsp.checkpoints import git
from openvaala_lsp.checkpoints.shadow import Checkpoint, ShadowRepo, Skipped
from openvaala_lsp.model import FileChange, FileChangeKind, SkippedFile

# what is read of one file's diff from git (`file_diff` cuts it further): a generated file of
# millions of lines is not held in memory to be cut
READ_DIFF_LINES = file_diff.MAX_DIFF_LINES + 10
READ_DIFF_BYTES = 2 * file_diff.MAX_DIFF_BYTES
MAX_TOTAL_DIFF_BYTES = 4 * 1024 * 1024  # of all the diffs of one answer

_KINDS = {"A": FileChangeKind.ADD, "D": FileChangeKind.DELETE, "R": FileChangeKind.MOVE}


@attrs.define(kw_only=True)
class _Entry:
    status: str
    path: str  # relative, as git names it
    moved_from: str | None = None
    additions: int = 0
    deletions: int = 0
    binary: bool = False
    diff: str | None = None


def _diff_tree_argv(*more: str) -> list[str]:
    return ["diff-tree", "-r", "-z", "--no-ext-diff", "--no-textconv", "--find-renames", *more]


def _entries(repo: ShadowRepo, old_tree: str, new_tree: str) -> list[_Entry]:
    out = repo.git(*_diff_tree_argv("--raw", "--numstat"), old_tree, new_tree)
    tokens = out.split(b"\0")
    entries: list[_Entry] = []
    counts: list[tuple[str, str]] = []
    at = 0
    while at < len(tokens):
        token = tokens[at].decode(errors="surrogateescape")
        at += 1
        if not token:
            continue
        if token.startswith(":"):
            status = token.split()[-1][:1]
            if status in ("R", "C"):
                old, new = os.fsdecode(tokens[at]), os.fsdecode(tokens[at + 1])
                at += 2
                entries.append(_Entry(status=status, path=new, moved_from=old if status == "R" else None))
            else:
                entries.append(_Entry(status=status, path=os.fsdecode(tokens[at])))
                at += 1
        else:
            added, deleted, path = token.split("\t", 2)
            if not path:  # a rename: the two paths follow
                at += 2
            counts.append((added, deleted))
    for entry, (added, deleted) in zip(entries, counts, strict=False):
        entry.binary = added == "-"
        entry.additions = int(added) if added.isdigit() else 0
        entry.deletions = int(deleted) if deleted.isdigit() else 0
    return entries


def _patches(repo: ShadowRepo, old_tree: str, new_tree: str, budget: list[int]) -> dict[str, str]:
    """Each changed file's unified diff by its (new) path, cut to the limits; `budget` holds the
    bytes the answer may still take. A file that changed type (a file made a symlink) comes as two
    diffs, a removal and an addition: the addition's is kept."""
    found: dict[str, str] = {}
    for path, text in _blocks(repo, old_tree, new_tree, budget):
        found[path] = text
    return found


def _blocks(repo: ShadowRepo, old_tree: str, new_tree: str, budget: list[int]) -> Iterable[tuple[str, str]]:
    argv = [repo.executable, *git.config_arguments(), "diff-tree", "-r", "-p", "--no-ext-diff", "--no-textconv"]
    argv += ["--no-color", "--find-renames", "-U3", old_tree, new_tree]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=repo.work_tree,
        env=git.environment(repo.git_dir, repo.work_tree),
    )
    assert process.stdout is not None
    current: _Cut | None = None
    try:
        for raw in process.stdout:
            if raw.startswith(b"diff --git "):
                if current is not None:
                    yield current.path(), current.text(budget)
                current = _Cut(raw)
            if current is not None:
                current.add(raw)
        if current is not None:
            yield current.path(), current.text(budget)
    finally:
        process.stdout.close()
        process.wait()


class _Cut:
    """One file's diff as it is read, kept up to the limits; what is past them only counted."""

    def __init__(self, header: bytes) -> None:
        self.header = header
        self.renamed_to: bytes | None = None
        self.lines: list[bytes] = []
        self.size = 0
        self.left_out = 0

    def path(self) -> str:
        """The file's path after the change: a rename's target, else the header's (`a/P b/P`)."""
        if self.renamed_to is not None:
            return os.fsdecode(_unquote(self.renamed_to))
        rest = self.header[len(b"diff --git ") :].rstrip(b"\n")
        if rest.startswith(b'"'):  # C-quoted sides: `"a/P" "b/P"`, or one side quoted
            end = _quoted_end(rest)
            return os.fsdecode(_unquote(rest[end + 1 :].lstrip(b" "))[2:])
        half = (len(rest) - 5) // 2  # `a/P b/P`: the same P on both sides (renames said so above)
        return os.fsdecode(rest[half + 5 :])

    def add(self, line: bytes) -> None:
        if line.startswith(b"rename to "):  # a line of the diff's text starts with a sign
            self.renamed_to = line[len(b"rename to ") :].rstrip(b"\n")
        if self.left_out or len(self.lines) >= READ_DIFF_LINES or self.size + len(line) > READ_DIFF_BYTES:
            self.left_out += 1
            return
        self.lines.append(line)
        self.size += len(line)

    def text(self, budget: list[int]) -> str:
        if budget[0] <= 0:
            total = MAX_TOTAL_DIFF_BYTES // 1024
            return f"{file_diff.CUT_MARKER} left out whole: this answer's diffs passed {total} KiB]\n"
        text = b"".join(self.lines).decode(errors="replace")
        if self.left_out:  # past what is read: `file_diff.capped` cuts it shorter, with its marker
            text += f"{file_diff.CUT_MARKER} {self.left_out:,} more lines left out]\n"
        budget[0] -= len(text)
        return text


_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def _quoted_end(text: bytes) -> int:
    """Where the C-quoted string that `text` starts with ends (its closing quote)."""
    at = 1
    while at < len(text):
        if text[at : at + 1] == b"\\":
            at += 2
            continue
        if text[at : at + 1] == b'"':
            return at
        at += 1
    return len(text) - 1


def _unquote(text: bytes) -> bytes:
    """A path as git prints it: bare, or C-quoted (`"a\\tb"`, octal escapes for bytes)."""
    if not text.startswith(b'"'):
        return text
    body, out, at = text[1 : _quoted_end(text)], bytearray(), 0
    while at < len(body):
        char = body[at : at + 1]
        if char == b"\\" and body[at + 1 : at + 4].isdigit():
            out.append(int(body[at + 1 : at + 4], 8))
            at += 4
        elif char == b"\\":
            out.append(_ESCAPES.get(body[at + 1 : at + 2], body[at + 1]))
            at += 2
        else:
            out += char
            at += 1
    return bytes(out)


def diff(
    repo: ShadowRepo, old: Checkpoint, new: Checkpoint, *, patches: bool = True, budget: list[int] | None = None
) -> list[FileChange]:
    """What changed in the folder from `old` to `new`, one `FileChange` per path (absolute)."""
    root = repo.work_tree
    entries = _entries(repo, old.tree, new.tree) if old.tree != new.tree else []
    if patches and entries:
        budget = budget if budget is not None else [MAX_TOTAL_DIFF_BYTES]
        texts = _patches(repo, old.tree, new.tree, budget)
        for entry in entries:
            if not entry.binary:
                entry.diff = texts.get(entry.path, "")
    before_skipped = {entry.path: entry for entry in old.skipped}
    after_skipped = {entry.path: entry for entry in new.skipped}
    changes: dict[str, FileChange] = {}
    for entry in entries:
        if entry.path in after_skipped or entry.path in before_skipped:
            continue  # listed below, as left out
        path = os.path.join(root, entry.path)
        kind = _KINDS.get(entry.status, FileChangeKind.UPDATE)
        moved_from = os.path.join(root, entry.moved_from) if entry.moved_from else None
        if entry.binary:
            changes[entry.path] = FileChange(path=path, kind=kind, moved_from=moved_from, binary=True)
            continue
        change = file_diff.from_unified(path, kind, entry.diff or "", moved_from=moved_from)
        if entry.diff is None:
            change.diff = None  # not asked for
        # git's counts are of the whole diff, also where the text read of it was cut
        change.additions, change.deletions = entry.additions, entry.deletions
        changes[entry.path] = change
    in_diff = {entry.path: entry.status for entry in entries}
    for path in sorted(set(before_skipped) | set(after_skipped)):
        was, now = before_skipped.get(path), after_skipped.get(path)
        if was is not None and now is not None and _same(was, now):
            continue
        status = in_diff.get(path)
        existed = was is not None or status == "D"
        exists = now is not None or status == "A"
        kind = FileChangeKind.UPDATE if existed and exists else FileChangeKind.ADD if exists else FileChangeKind.DELETE
        why = (now or was or Skipped(path=path, why="left out")).why
        changes[path] = FileChange(
            path=os.path.join(root, path), kind=kind, skipped=[SkippedFile(path=os.path.join(root, path), why=why)]
        )
    return [changes[path] for path in sorted(changes)]


def _same(was: Skipped, now: Skipped) -> bool:
    return was.size == now.size and was.mtime_ns == now.mtime_ns and was.size >= 0


def summary(change: FileChange) -> FileChange:
    """A change without its diff (what `turnDiffUpdated` carries)."""
    return attrs.evolve(change, diff=None)
