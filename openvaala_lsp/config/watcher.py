"""Hot reload by polling: stat every source of the last load (files and directories, present or
not) and load again when any of them changed. Polling needs no dependency and works the same on
every platform and file system; the few dozen stats per interval cost nothing."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from .loader import LoadedDefinitions, load_definitions

log = logging.getLogger(__name__)

Stat = tuple[int, int, int] | None  # (mtime_ns, size, inode): an editor's atomic replace changes the inode
OnChange = Callable[[LoadedDefinitions], Awaitable[None] | None]


def snapshot(paths: Iterable[Path]) -> dict[Path, Stat]:
    result: dict[Path, Stat] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            result[path] = None
        else:
            result[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return result


class DefinitionsWatcher:
    """Calls `on_change` with a fresh load when a source was added, removed or edited and the
    loaded definitions or errors differ. A burst of writes yields one load: a change is acted on
    once two polls in a row agree."""

    def __init__(
        self,
        folders: Sequence[str | os.PathLike[str]],
        on_change: OnChange,
        *,
        interval: float = 1.0,
        config_dir: Path | None = None,
        require_trust: bool = False,
    ) -> None:
        self._folders = list(folders)
        self._on_change = on_change
        self._interval = interval
        self._config_dir = config_dir
        self._require_trust = require_trust
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._current: LoadedDefinitions | None = None
        self._stats: dict[Path, Stat] = {}

    @property
    def current(self) -> LoadedDefinitions | None:
        """The last load (set by `start()`, so a caller can take the initial definitions from here)."""
        return self._current

    def start(self) -> None:
        """Loads once (not reported to `on_change`) and starts polling; needs a running loop."""
        if self._task is not None:
            return
        self._current = self._load()
        self._task = asyncio.get_running_loop().create_task(self._poll(), name="definitions-watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def reload(self) -> LoadedDefinitions:
        """Loads now and reports the result to `on_change`, changed or not."""
        async with self._lock:
            loaded = await asyncio.to_thread(self._load)
            await self._report(loaded)
            return loaded

    def _load(self) -> LoadedDefinitions:
        before = snapshot(self._stats)
        loaded = load_definitions(self._folders, config_dir=self._config_dir, require_trust=self._require_trust)
        after = snapshot(loaded.sources)
        # a path already known keeps its stat from before the load: had it changed while we read
        # it, the next poll sees the difference and loads again
        self._stats = {path: before.get(path, stat) for path, stat in after.items()}
        self._current = loaded
        return loaded

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self._poll_once()
            except Exception:  # a watcher that dies silently would be worse than a logged error
                log.exception("reloading definitions failed")

    async def _poll_once(self) -> None:
        seen = await asyncio.to_thread(snapshot, self._stats)
        if seen == self._stats:
            return
        while True:  # debounce: wait until the files stop changing
            await asyncio.sleep(self._interval)
            again = await asyncio.to_thread(snapshot, self._stats)
            if again == seen:
                break
            seen = again
        async with self._lock:
            previous = self._current
            loaded = await asyncio.to_thread(self._load)
            if previous is None or (loaded.definitions, loaded.errors) != (previous.definitions, previous.errors):
                await self._report(loaded)

    async def _report(self, loaded: LoadedDefinitions) -> None:
        try:
            result = self._on_change(loaded)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("on_change failed")
