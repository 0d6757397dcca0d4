"""The client's workspace: its directories (listed, resolved) and a terminal's environment there."""

from __future__ import annotations

from openvaala_lsp.protocol import api
from openvaala_lsp.runtime import catalog
from openvaala_lsp.runtime.client import Client, environment_of, format_environment
from openvaala_lsp.runtime.folders import containing_folder, list_subdirectories, resolve_directory
from openvaala_lsp.runtime.state import RuntimeState


class Workspace:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def _check_executor(self, client: Client, executor_id: str | None) -> str:
        return catalog.check_executor(await self.state.definitions(client), executor_id, "$.executorId")

    async def get_directories(
        self, client: Client, params: api.GetWorkspaceDirectoriesParams
    ) -> api.WorkspaceDirectories:
        await self._check_executor(client, params.executor_id)
        folders = await client.workspace_folders()
        directory = resolve_directory(params.directory, folders, params.base_directory)
        if params.base_directory:
            base = resolve_directory(params.base_directory, folders)
        else:
            holder = containing_folder(directory, folders)
            base = holder.path if holder else directory
        return api.WorkspaceDirectories(
            base_directory=base,
            directory=directory,
            entries=list_subdirectories(directory, folders),
            workspace_folders=folders,
        )

    async def resolve_directory(
        self, client: Client, params: api.ResolveWorkspaceDirectoryParams
    ) -> api.ResolveWorkspaceDirectoryResult:
        await self._check_executor(client, params.executor_id)
        folders = await client.workspace_folders()
        return api.ResolveWorkspaceDirectoryResult(
            directory=resolve_directory(params.directory, folders, params.base_directory)
        )

    async def open_terminal(self, client: Client, params: api.OpenTerminalWorkspaceParams) -> api.TerminalWorkspace:
        executor_id = await self._check_executor(client, params.executor_id)
        folders = await client.workspace_folders()
        directory = resolve_directory(params.directory, folders)
        holder = containing_folder(directory, folders)
        return api.TerminalWorkspace(
            directory=directory,
            executor_id=executor_id,
            workspace=api.Workspace(
                root=holder.path if holder else directory,
                environment=format_environment(environment_of(client, params.environment)),
            ),
        )
