"""The client's workspace: its directories (listed, resolved) and a terminal's environment there,
on the executor the request names (the local one: the client's workspace folders; an ssh one: its
remote roots)."""

from __future__ import annotations

from openvaala_lsp.executors.base import Executor
from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol import api
from openvaala_lsp.runtime import catalog
from openvaala_lsp.runtime.client import Client, environment_of, format_environment
from openvaala_lsp.runtime.state import RuntimeState


class Workspace:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def _executor(self, client: Client, executor_id: str | None) -> tuple[str, Executor, list[WorkspaceFolder]]:
        """The executor's id, the executor and the roots of its tools."""
        definitions = await self.state.definitions(client)
        checked = catalog.check_executor(definitions, executor_id, "$.executorId")
        executor = self.state.executors.get(definitions, checked)
        return checked, executor, executor.roots(await client.workspace_folders())

    async def get_directories(
        self, client: Client, params: api.GetWorkspaceDirectoriesParams
    ) -> api.WorkspaceDirectories:
        _, executor, folders = await self._executor(client, params.executor_id)
        directory = await executor.resolve_directory(params.directory, folders, params.base_directory)
        if params.base_directory:
            base = await executor.resolve_directory(params.base_directory, folders)
        else:
            base = executor.containing_root(directory, folders) or directory
        return api.WorkspaceDirectories(
            base_directory=base,
            directory=directory,
            entries=await executor.subdirectories(directory, folders),
            workspace_folders=folders,
        )

    async def resolve_directory(
        self, client: Client, params: api.ResolveWorkspaceDirectoryParams
    ) -> api.ResolveWorkspaceDirectoryResult:
        _, executor, folders = await self._executor(client, params.executor_id)
        return api.ResolveWorkspaceDirectoryResult(
            directory=await executor.resolve_directory(params.directory, folders, params.base_directory)
        )

    async def open_terminal(self, client: Client, params: api.OpenTerminalWorkspaceParams) -> api.TerminalWorkspace:
        executor_id, executor, folders = await self._executor(client, params.executor_id)
        directory = await executor.resolve_directory(params.directory, folders)
        return api.TerminalWorkspace(
            directory=directory,
            executor_id=executor_id,
            workspace=api.Workspace(
                root=executor.containing_root(directory, folders) or directory,
                environment=format_environment(executor.environment(environment_of(client, params.environment))),
            ),
        )
