"""Writing a snapshot's files back: into the folder (only the paths a revert changes) or into
another directory (a fork's files). The folder is hostile ground: every path is walked one
directory at a time from the root with `O_NOFOLLOW`, so no symlink in it (planted before or while
we write) leads a write or a removal out of the root; a `..`, an absolute path or a `.git`
component is refused, and files are replaced by a rename, never written through."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Mapping

import attrs

from openvaala_lsp.checkpoints.shadow import ShadowRepo

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RestoreFailed(Exception):
    """A path could not be restored (the message names it); the paths before it were."""


@attrs.frozen(kw_only=True)
class Entry:
    """A file of a tree: its git mode (`100644`, `100755`, `120000`) and blob id."""

    mode: str
    oid: str


def tree_entries(repo: ShadowRepo, tree: str) -> dict[str, Entry]:
    """Every file of a tree by its path in the folder."""
    out = repo.git("ls-tree", "-r", "-z", "--full-tree", tree)
    entries: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        if kind == "blob":
            entries[os.fsdecode(path)] = Entry(mode=mode, oid=oid)
    return entries


def blobs(repo: ShadowRepo, oids: Iterable[str]) -> dict[str, bytes]:
    """The contents of blobs, in one `git cat-file --batch`."""
    wanted = sorted(set(oids))
    if not wanted:
        return {}
    out = repo.git("cat-file", "--batch", stdin="".join(f"{oid}\n" for oid in wanted).encode())
    contents: dict[str, bytes] = {}
    at = 0
    for oid in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].decode().split()
        if len(header) < 3 or header[1] != "blob":
            raise RestoreFailed(f"the checkpoint misses a file's content ({oid})")
        size = int(header[2])
        contents[oid] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return contents


def apply(root: str, plan: Mapping[str, Entry | None], contents: Mapping[str, bytes]) -> None:
    """Makes each path of `plan` under the directory `root` hold its entry (None: no file there).
    Removals first (a file may make way for a directory), then the writes in path order."""
    root_fd = os.open(root, _DIRECTORY)
    try:
        removed_from: set[str] = set()
        for path in sorted(plan):
            if plan[path] is None:
                _remove(root_fd, _parts(path))
                removed_from.add(os.path.dirname(path))
        for path in sorted(plan):
            entry = plan[path]
            if entry is not None:
                _write(root_fd, _parts(path), entry, contents[entry.oid])
        _prune(root_fd, removed_from)
    finally:
        os.close(root_fd)


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..", ".git") for part in parts):
        raise RestoreFailed(f"refusing to restore a path that could leave the folder or enter .git: {path!r}")
    return parts


def _open_dir(root_fd: int, parts: list[str], *, create: bool) -> int | None:
    """The directory `parts` under the root, opened without following a symlink; made when missing
    (`create`), and a file or symlink in its place removed first. None: it is not there."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except (NotADirectoryError, OSError) as error:
                if not create or isinstance(error, PermissionError):
                    raise
                os.unlink(part, dir_fd=fd)  # a symlink or a file where the snapshot has a directory
                os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove(root_fd: int, parts: list[str]) -> None:
    try:
        fd = _open_dir(root_fd, parts[:-1], create=False)
    except OSError:
        return  # a parent is no directory now: the file is not there
    if fd is None:
        return
    try:
        info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(parts[-1], dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _write(root_fd: int, parts: list[str], entry: Entry, content: bytes) -> None:
    path = "/".join(parts)
    try:
        fd = _open_dir(root_fd, parts[:-1], create=True)
    except OSError as error:
        raise RestoreFailed(f"cannot make the directory of {path}: {error.strerror or error}") from error
    assert fd is not None
    temporary = f".{parts[-1][:100]}.openvaala-{secrets.token_hex(4)}"
    try:
        if entry.mode == "120000":
            os.symlink(os.fsdecode(content), temporary, dir_fd=fd)
        else:
            mode = 0o777 if entry.mode == "100755" else 0o666
            out = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd
            )
            with os.fdopen(out, "wb") as handle:
                handle.write(content)
        os.rename(temporary, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
    except OSError as error:
        try:
            os.unlink(temporary, dir_fd=fd)
        except OSError:
            pass
        raise RestoreFailed(f"cannot restore {path}: {error.strerror or error}") from error
    finally:
        os.close(fd)


def _prune(root_fd: int, directories: set[str]) -> None:
    """Removes the directories a removal left empty, deepest first, never the root."""
    seen: set[str] = set()
    for directory in directories:
        while directory and directory not in seen:
            seen.add(directory)
            directory = os.path.dirname(directory)
    for directory in sorted(seen, key=lambda d: (-d.count("/"), d)):
        parts = directory.split("/")
        try:
            fd = _open_dir(root_fd, parts[:-1], create=False)
        except OSError:
            continue
        if fd is None:
            continue
        try:
            os.rmdir(parts[-1], dir_fd=fd)
        except OSError:
            pass  # not empty, or gone
        finally:
            os.close(fd)


CHECK_OUT_BATCH = 2_000  # files read from git at once: a large tree is not held in memory whole


def check_out(repo: ShadowRepo, tree: str, directory: str) -> int:
    """Writes every file of `tree` into `directory` (existing, empty); how many."""
    entries = tree_entries(repo, tree)
    paths = sorted(entries)
    for start in range(0, len(paths), CHECK_OUT_BATCH):
        batch = {path: entries[path] for path in paths[start : start + CHECK_OUT_BATCH]}
        apply(directory, batch, blobs(repo, (entry.oid for entry in batch.values())))
    return len(entries)
