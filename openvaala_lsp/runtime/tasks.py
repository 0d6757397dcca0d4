"""The runtime's own tasks (turns, background starts): it owns every task it starts, so stopping the
runtime cancels all of them and waits for them, and none outlives it unseen.

asyncio.TaskGroup would do this inside one `async with`; the runtime's life spans many requests, so
this is the same idea held by the runtime object: spawn, then close.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from openvaala_lsp.protocol.errors import RuntimeStopped

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Tasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        if self._closed:
            coro.close()
            raise RuntimeStopped()
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            # a task's own code reports its failures; one that escapes is a bug worth a traceback
            logger.error("task %s failed", task.get_name(), exc_info=error)

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        """Refuses new tasks, cancels the running ones and waits until they end."""
        self._closed = True
        while self._tasks:
            running = list(self._tasks)
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
