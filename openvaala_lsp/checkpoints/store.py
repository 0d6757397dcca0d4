"""Where the shadow repositories live: one per workspace folder, under the runtime's data directory
(`<data>/checkpoints/<hash of the folder's real path>`), made on first use. The store knows whether
git can be used here at all; when it cannot, it has no repositories and the runtime goes on
without checkpoints."""

from __future__ import annotations

import hashlib
import os
import threading

from openvaala_lsp import paths
from openvaala_lsp.checkpoints import git
from openvaala_lsp.checkpoints.shadow import Limits, ShadowRepo


class CheckpointStore:
    def __init__(self, root: str | None = None, *, limits: Limits | None = None, state: git.GitState | None = None):
        self.root = root if root is not None else os.path.join(os.fspath(paths.data_dir()), "checkpoints")
        self.limits = limits or Limits()
        self._state = state
        self._repos: dict[str, ShadowRepo] = {}
        self._lock = threading.Lock()
        if os.path.isdir(self.root):  # made by an earlier build, perhaps with looser modes
            paths.ensure_private_dir(self.root)

    @property
    def state(self) -> git.GitState:
        """Whether git is there (probed on first use: not at the runtime's start)."""
        if self._state is None:
            self._state = git.state()
        return self._state

    @property
    def usable(self) -> bool:
        return self.state.usable and self.state.executable is not None

    def repo(self, folder: str) -> ShadowRepo:
        """The shadow repository of a workspace folder (its real path is taken)."""
        if not self.usable or self.state.executable is None:
            raise RuntimeError(f"checkpoints are not available: {self.state.reason}")
        real = os.path.realpath(folder)
        with self._lock:
            repo = self._repos.get(real)
            if repo is None:
                paths.ensure_private_dir(self.root)
                name = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
                data = os.path.realpath(os.fspath(paths.data_dir()))
                repo = ShadowRepo(
                    self.state.executable,
                    os.path.join(self.root, name),
                    real,
                    self.limits,
                    excluded=(data, os.path.realpath(self.root)),
                )
                self._repos[real] = repo
            return repo

    def repos_of(self, conversation_id: str) -> list[ShadowRepo]:
        """The repositories holding checkpoints of a conversation (of folders that still exist)."""
        if not self.usable:
            return []
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            git_dir = os.path.join(self.root, name)
            try:
                with open(os.path.join(git_dir, "workspace")) as handle:
                    folder = handle.read().rstrip("\n")
            except OSError:
                continue
            if os.path.isdir(folder):
                repo = self.repo(folder)
                if repo.has_refs(conversation_id):
                    found.append(repo)
        return found

    def forget(self, conversation_id: str) -> None:
        """Deletes the checkpoints of a conversation (deleted) from every repository."""
        for repo in self.repos_of(conversation_id):
            repo.delete_refs(conversation_id)
