"""The executor interface: what the runtime asks of the place where tools run."""

from __future__ import annotations

from typing import Protocol

from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.tools.base import Tool


class Executor(Protocol):
    """Where a conversation's tools run, and the directories there a client may choose."""

    @property
    def remote(self) -> bool:
        """Whether its files are on another machine (then no local checkpoint sees them)."""

    def tools(self) -> list[Tool]:
        """New instances of the tools it runs, in the order they are offered to a model."""

    def roots(self, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        """The directories its tools may use, given the client's workspace folders."""

    async def resolve_directory(
        self, directory: str | None, folders: list[WorkspaceFolder], base_directory: str | None = None
    ) -> str:
        """The absolute real path of an existing directory inside its roots (WorkspaceDenied if not)."""

    async def subdirectories(self, directory: str, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        """The child directories of a resolved `directory` that a client may choose, by name."""

    def containing_root(self, directory: str, folders: list[WorkspaceFolder]) -> str | None:
        """The innermost root holding a resolved `directory`."""

    def environment(self, client_environment: dict[str, str]) -> dict[str, str]:
        """A terminal's environment there."""
