"""A workspace folder's shadow repository: a bare git repository in the runtime's data directory
whose work tree is the folder. A snapshot stages the folder into the shadow's own index (git's stat
cache makes the next one cheap: only changed files are read) and writes it as a tree, kept in a
commit whose message lists what the limits left out; refs keep the commits from any pruning.

The folder's own `.git` is never read or written: git runs with `GIT_DIR` set to the shadow
(`git.py`), and `.git` entries are left out of every snapshot."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import struct
import threading
from collections.abc import Iterator, Sequence

import attrs

from openvaala_lsp import paths
from openvaala_lsp.checkpoints import git

MIB = 1024 * 1024

# what the shadow's own attributes say for every path: they come before the workspace's
# `.gitattributes`, so a file is stored byte for byte (no line ending conversion, no filter, no
# encoding) and diffed by its content whatever the workspace says
ATTRIBUTES = "* -text !eol -filter -ident !working-tree-encoding !diff !merge\n"
REF_ROOT = "refs/openvaala"
_REF_PART = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


@attrs.frozen(kw_only=True)
class Limits:
    """What a snapshot holds at most; a file past them is left out and listed."""

    max_file_bytes: int = 10 * MIB
    max_files: int = 100_000
    # of the files new to the shadow repository that one snapshot reads: a first snapshot of a huge
    # folder is bounded (what is past it is listed, and comes in with the next snapshots)
    max_new_bytes: int = 512 * MIB


@attrs.frozen(kw_only=True)
class Skipped:
    """A file a snapshot left out: its path in the folder, why, and its size and change time then (a
    file left out by two snapshots changed between them if these differ)."""

    path: str
    why: str
    size: int = -1
    mtime_ns: int = -1

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "why": self.why, "size": self.size, "mtime": self.mtime_ns}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Skipped:
        size, mtime = data.get("size", -1), data.get("mtime", -1)
        return cls(
            path=str(data["path"]),
            why=str(data["why"]),
            size=size if isinstance(size, int) else -1,
            mtime_ns=mtime if isinstance(mtime, int) else -1,
        )


@attrs.frozen(kw_only=True)
class Checkpoint:
    """One snapshot of a folder: the commit that holds it, its tree, and what it left out."""

    commit: str
    tree: str
    skipped: tuple[Skipped, ...] = ()


class ShadowRepo:
    """The shadow repository of one folder (`work_tree`, a real path) at `git_dir`. Its methods block
    (run them in a thread); one snapshot or restore at a time, across processes too (a lock file)."""

    def __init__(self, executable: str, git_dir: str, work_tree: str, limits: Limits, excluded: Sequence[str] = ()):
        self.executable = executable
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.limits = limits
        self.excluded = tuple(excluded)  # paths in the work tree never snapshotted (the runtime's own data)
        self._lock = threading.Lock()
        self._ready = False
        self._last: Checkpoint | None = None

    # Running git

    def git(self, *argv: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        return git.run(self.executable, self.git_dir, self.work_tree, argv, stdin=stdin, check=check).stdout

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """This repository to the caller alone (threads of this process, and other processes)."""
        with self._lock:
            self._ensure()
            lock = os.open(os.path.join(self.git_dir, "openvaala.lock"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            with open(lock, "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def _ensure(self) -> None:
        if self._ready:
            return
        os.makedirs(self.git_dir, mode=0o700, exist_ok=True)
        if not os.path.exists(os.path.join(self.git_dir, "HEAD")):
            git.run(self.executable, None, self.root_of_git_dir(), ["init", "-q", "--bare", self.git_dir])
        info = os.path.join(self.git_dir, "info")
        os.makedirs(info, mode=0o700, exist_ok=True)
        excludes = ["# written by openvaala: what its checkpoints never hold", ".git", *self._excluded_patterns()]
        _write(os.path.join(info, "exclude"), "\n".join(excludes) + "\n")
        _write(os.path.join(info, "attributes"), ATTRIBUTES)
        _write(os.path.join(self.git_dir, "workspace"), self.work_tree + "\n")
        self._ready = True

    def root_of_git_dir(self) -> str:
        return os.path.dirname(self.git_dir)

    def _excluded_patterns(self) -> list[str]:
        patterns = []
        for path in self.excluded:
            relative = os.path.relpath(path, self.work_tree)
            if relative != "." and not relative.startswith(".."):
                # a literal path from the root: glob characters escaped
                patterns.append("/" + re.sub(r"([\\*?\[\]!# ])", r"\\\1", relative.replace(os.sep, "/")))
        return patterns

    # Snapshots

    def snapshot(self) -> Checkpoint:
        """The folder as it is now, as far as `.gitignore` and the limits let it in."""
        with self.locked():
            return self._snapshot()

    def _snapshot(self) -> Checkpoint:
        listing = self.git("ls-files", "-z", "-t", "--others", "--modified", "--exclude-standard")
        skipped: list[Skipped] = []
        tracked_skipped: list[str] = []
        untracked: list[str] = []
        for entry in listing.split(b"\0"):
            if len(entry) < 3:
                continue
            tag, path = entry[:1], os.fsdecode(entry[2:])
            if path.endswith("/"):  # a repository of its own inside the folder
                skipped.append(Skipped(path=path.rstrip("/"), why="a git repository of its own: not checkpointed"))
                continue
            too_large = self._too_large(path)
            if too_large is not None:
                skipped.append(too_large)
                if tag != b"?":
                    tracked_skipped.append(path)
            elif tag == b"?":
                untracked.append(path)
        skipped += self._over_budget(untracked)
        if tracked_skipped:
            # out of the index only (never the work tree): the snapshot lacks them, and lists them
            names = b"".join(os.fsencode(path) + b"\0" for path in tracked_skipped)
            self.git("update-index", "-z", "--force-remove", "--stdin", stdin=names)
        skipped += self._add(skipped)
        tree = self.git("write-tree").decode().strip()
        skipped.sort(key=lambda entry: entry.path)
        last = self._last
        if last is not None and last.tree == tree and last.skipped == tuple(skipped):
            return last
        message = json.dumps({"skipped": [entry.to_json() for entry in skipped]}, ensure_ascii=False)
        commit = self.git("commit-tree", tree, stdin=message.encode()).decode().strip()
        self._last = Checkpoint(commit=commit, tree=tree, skipped=tuple(skipped))
        return self._last

    def _over_budget(self, untracked: list[str]) -> list[Skipped]:
        """The new files past the count limit, and past the bytes one snapshot reads (in path order)."""
        room = max(self.limits.max_files - self._index_entries(), 0)
        left_out: list[Skipped] = []
        read = 0
        for index, path in enumerate(sorted(untracked)):
            size, mtime = _lstat(path, self.work_tree)
            if index >= room:
                why = f"more than {self.limits.max_files} files in the folder: left out"
            elif read + max(size, 0) > self.limits.max_new_bytes:
                why = f"past the {_size(self.limits.max_new_bytes)} of new files one snapshot reads: left out for now"
            else:
                read += max(size, 0)
                continue
            left_out.append(Skipped(path=path, why=why, size=size, mtime_ns=mtime))
        return left_out

    def _too_large(self, path: str) -> Skipped | None:
        size, mtime = _lstat(path, self.work_tree)
        if size > self.limits.max_file_bytes:
            why = f"larger than the limit of {_size(self.limits.max_file_bytes)} ({_size(size)}): left out"
            return Skipped(path=path, why=why, size=size, mtime_ns=mtime)
        return None

    def _add(self, skipped: list[Skipped]) -> list[Skipped]:
        """Stages the folder but what is left out; the files git could not read, left out too."""
        specs = b".\0" + b"".join(b":(exclude,literal)" + os.fsencode(entry.path) + b"\0" for entry in skipped)
        completed = git.run(
            self.executable,
            self.git_dir,
            self.work_tree,
            ["add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"],
            stdin=specs,
            check=False,
        )
        unreadable = _unreadable(completed.stderr.decode(errors="replace"))
        if completed.returncode != 0 and not unreadable:
            raise git.GitFailed(["add", "-A"], completed.returncode, completed.stderr.decode(errors="replace"))
        return [Skipped(path=path, why=f"unreadable ({why}): left out") for path, why in unreadable]

    def _index_entries(self) -> int:
        """How many files the shadow index holds, from its header (no git process needed)."""
        try:
            with open(os.path.join(self.git_dir, "index"), "rb") as handle:
                header = handle.read(12)
        except FileNotFoundError:
            return 0
        if len(header) < 12 or header[:4] != b"DIRC":
            return 0
        return int(struct.unpack(">I", header[8:12])[0])

    # Reading snapshots back

    def checkpoint(self, commit: str) -> Checkpoint:
        """The checkpoint a commit of this repository holds."""
        raw = self.git("cat-file", "commit", commit).decode(errors="replace")
        header, _, message = raw.partition("\n\n")
        tree = next(line.split()[1] for line in header.splitlines() if line.startswith("tree "))
        try:
            data = json.loads(message)
        except ValueError:
            data = {}
        entries = data.get("skipped", []) if isinstance(data, dict) else []
        skipped = tuple(Skipped.from_json(entry) for entry in entries if isinstance(entry, dict) and "path" in entry)
        return Checkpoint(commit=commit, tree=tree, skipped=skipped)

    # Refs: refs/openvaala/<conversation>/<turn>/<name>

    def set_ref(self, conversation_id: str, turn_id: str, name: str, commit: str) -> None:
        self.git("update-ref", ref_name(conversation_id, turn_id, name), commit)

    def refs(self, conversation_id: str, turn_id: str | None = None) -> dict[tuple[str, str], str]:
        """(turn id, name) -> commit, of a conversation (or one of its turns)."""
        prefix = ref_name(conversation_id, turn_id) if turn_id is not None else ref_name(conversation_id)
        if not self.has_refs(conversation_id):
            return {}
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)", prefix + "/").decode()
        found: dict[tuple[str, str], str] = {}
        for line in out.splitlines():
            commit, _, ref = line.partition(" ")
            parts = ref.split("/")
            if len(parts) == 5:
                found[(parts[3], parts[4])] = commit
        return found

    def delete_refs(self, conversation_id: str) -> None:
        """Forgets every checkpoint of a conversation (deleted): its snapshots are kept no longer."""
        with self.locked():
            refs = self.git("for-each-ref", "--format=%(refname)", ref_name(conversation_id) + "/").decode()
            commands = "".join(f"delete {ref}\n" for ref in refs.split())
            if commands:
                self.git("update-ref", "--stdin", stdin=commands.encode())

    def has_refs(self, conversation_id: str) -> bool:
        """Whether any checkpoint of the conversation is here (the refs are loose: never packed)."""
        try:
            return os.path.isdir(os.path.join(self.git_dir, ref_name(conversation_id)))
        except ValueError:
            return False


def ref_name(conversation_id: str, turn_id: str | None = None, name: str | None = None) -> str:
    parts = [part for part in (conversation_id, turn_id, name) if part is not None]
    for part in parts:
        if not _REF_PART.match(part):
            raise ValueError(f"not an id a checkpoint can be named by: {part!r}")
    return "/".join([REF_ROOT, *parts])


def _size(count: int) -> str:
    if count >= MIB:
        return f"{count / MIB:.1f} MiB"
    return f"{count / 1024:.1f} KiB" if count >= 1024 else f"{count} bytes"


def _lstat(path: str, root: str) -> tuple[int, int]:
    try:
        info = os.lstat(os.path.join(root, path))
    except OSError:
        return -1, -1
    if not stat.S_ISREG(info.st_mode):
        return -1, info.st_mtime_ns
    return info.st_size, info.st_mtime_ns


_UNREADABLE = re.compile(r"""^error: open\("(.*)"\): (.*)$|^error: (?:unable to index file|cannot hash) '?(.*?)'?$""")


def _unreadable(stderr: str) -> list[tuple[str, str]]:
    """The files `git add --ignore-errors` could not read, and why."""
    found: list[tuple[str, str]] = []
    for line in stderr.splitlines():
        match = _UNREADABLE.match(line.strip())
        if match is None:
            continue
        if match.group(1) is not None:
            found.append((match.group(1), match.group(2)))
        elif match.group(3) and not any(path == match.group(3) for path, _ in found):
            found.append((match.group(3), "git could not index it"))
    return found


def _write(path: str, text: str) -> None:
    try:
        with open(path) as handle:
            if handle.read() == text:
                return
    except OSError as error:
        if error.errno != errno.ENOENT:
            raise
    paths.write_private(path, text)
