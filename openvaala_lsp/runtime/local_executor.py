"""The local executor: tools as processes of this machine, in the client's workspace folders."""

from __future__ import annotations

from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.runtime.folders import containing_folder, list_subdirectories, resolve_directory
from openvaala_lsp.tools.base import Tool
from openvaala_lsp.tools.registry import local_tools


class LocalExecutor:
    remote = False

    def tools(self) -> list[Tool]:
        return local_tools()

    def roots(self, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        return folders

    async def resolve_directory(
        self, directory: str | None, folders: list[WorkspaceFolder], base_directory: str | None = None
    ) -> str:
        return resolve_directory(directory, folders, base_directory)

    async def subdirectories(self, directory: str, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        return list_subdirectories(directory, folders)

    def containing_root(self, directory: str, folders: list[WorkspaceFolder]) -> str | None:
        holder = containing_folder(directory, folders)
        return holder.path if holder else None

    def environment(self, client_environment: dict[str, str]) -> dict[str, str]:
        return client_environment


LOCAL = LocalExecutor()
