"""The runtime's executors: the local one, and one pooled ssh connection per ssh executor, made on
first use and kept while its definition stays the same."""

from __future__ import annotations

import asyncio

from openvaala_lsp.definitions import Definitions, ExecutorDefinition
from openvaala_lsp.executors.base import Executor
from openvaala_lsp.executors.ssh import REACH_TIMEOUT, SshExecutor
from openvaala_lsp.executors.ssh_target import ssh_target
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import NotFound
from openvaala_lsp.runtime.local_executor import LOCAL

LOCAL_EXECUTOR = "local"
LOCAL_EXECUTOR_DESCRIPTION = "runs tools as local processes in the conversation's workspace directory"


def is_local(executor_id: str | None) -> bool:
    return not executor_id or executor_id == LOCAL_EXECUTOR


class Executors:
    def __init__(self) -> None:
        self._ssh: dict[str, tuple[ExecutorDefinition, SshExecutor]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, definitions: Definitions, executor_id: str | None) -> Executor:
        """The executor of that id (NotFound if none is defined)."""
        if is_local(executor_id):
            return LOCAL
        definition = next((e for e in definitions.executors if e.id == executor_id), None)
        if definition is None:
            raise NotFound(f"executor not found: {executor_id}")
        if definition.kind != "ssh":
            return LOCAL
        return self._ssh_executor(definition)

    def _ssh_executor(self, definition: ExecutorDefinition) -> SshExecutor:
        pooled = self._ssh.get(definition.id)
        if pooled is not None and pooled[0] == definition:
            return pooled[1]
        if pooled is not None:  # its definition changed: the old connection goes
            self._close_later(pooled[1])
        try:
            executor = SshExecutor(ssh_target(definition))
        except ValueError as error:
            raise NotFound(str(error)) from None
        self._ssh[definition.id] = (definition, executor)
        return executor

    def _close_later(self, executor: SshExecutor) -> None:
        task = asyncio.get_running_loop().create_task(executor.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def details(self, definitions: Definitions) -> list[api.ExecutorDetails]:
        """Every executor, each ssh one with whether its host answers now (asked all at once)."""
        local = api.ExecutorDetails(
            id=LOCAL_EXECUTOR, kind="local", description=LOCAL_EXECUTOR_DESCRIPTION, reachable=True
        )
        configured = [e for e in definitions.executors if e.id != LOCAL_EXECUTOR]
        found = await asyncio.gather(*(self._details(definitions, e) for e in configured))
        return [local, *found]

    async def _details(self, definitions: Definitions, definition: ExecutorDefinition) -> api.ExecutorDetails:
        details = api.ExecutorDetails(id=definition.id, kind=definition.kind, description=definition.description or "")
        if definition.kind != "ssh":
            details.reachable = True
            return details
        try:
            executor = self._ssh_executor(definition)
        except NotFound as error:
            details.reachable, details.error = False, str(error)
            return details
        try:
            why = await asyncio.wait_for(executor.reachable(), REACH_TIMEOUT)
        except TimeoutError:
            why = f"executor {definition.id}: {executor.target.label} did not answer within {REACH_TIMEOUT:g} s"
        details.reachable, details.error = why is None, why
        return details

    async def close(self) -> None:
        executors = [executor for _, executor in self._ssh.values()]
        self._ssh.clear()
        await asyncio.gather(*(executor.close() for executor in executors), *self._closing)
