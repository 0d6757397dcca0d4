"""Resolving directories against a client's workspace folders.

Relative paths resolve against the folders (in a multi-root workspace `folderName/sub` picks the
folder by name, otherwise the first folder is the base); the result's real path (symlinks and `..`
resolved) must lie inside one of the folders and be an existing directory.
"""

from __future__ import annotations

import os

from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol.errors import WorkspaceDenied


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def real_folders(folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
    return [WorkspaceFolder(name=f.name, path=os.path.realpath(f.path)) for f in folders]


def folder_key(folders: list[WorkspaceFolder]) -> tuple[str, ...]:
    """The real paths of the folders: what per-workspace configuration is keyed by."""
    return tuple(os.path.realpath(f.path) for f in folders)


def containing_folder(path: str, folders: list[WorkspaceFolder]) -> WorkspaceFolder | None:
    """The innermost folder holding the real `path`."""
    real = os.path.realpath(path)
    matches = [f for f in real_folders(folders) if _inside(real, f.path)]
    return max(matches, key=lambda f: len(f.path), default=None)


def resolve_directory(directory: str | None, folders: list[WorkspaceFolder], base_directory: str | None = None) -> str:
    """The absolute real path of `directory` (default: the base, else the first folder)."""
    if not folders:
        raise WorkspaceDenied("the client has no workspace folders")
    if base_directory:
        base = resolve_directory(base_directory, folders)
    else:
        base = os.path.realpath(folders[0].path)
    if not directory:
        candidate = base
    elif os.path.isabs(directory):
        candidate = directory
    else:
        candidate = os.path.join(base, directory)
        head, _, rest = directory.replace(os.sep, "/").partition("/")
        if not base_directory and len(folders) > 1:
            named = [f for f in folders if head in (f.name, os.path.basename(f.path.rstrip(os.sep)))]
            if named:
                candidate = os.path.join(named[0].path, rest)
    real = os.path.realpath(candidate)
    if containing_folder(real, folders) is None:
        raise WorkspaceDenied(f"directory is outside the workspace folders: {directory or candidate}")
    if not os.path.isdir(real):
        raise WorkspaceDenied(f"directory does not exist: {directory or candidate}")
    return real


def list_subdirectories(directory: str, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
    """Child directories of `directory` that resolve inside the folders, sorted by name; `.git` is
    left out, and so is a symlink leading out of the workspace (choosing it would be refused)."""
    entries: list[WorkspaceFolder] = []
    with os.scandir(directory) as it:
        for entry in it:
            if entry.name == ".git" or not entry.is_dir() or containing_folder(entry.path, folders) is None:
                continue
            entries.append(WorkspaceFolder(name=entry.name, path=os.path.join(directory, entry.name)))
    return sorted(entries, key=lambda e: e.name)
