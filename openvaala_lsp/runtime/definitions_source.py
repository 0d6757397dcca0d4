"""Where definitions come from: the set a client gave with `setDefinitions`, else the configuration
files of the workspace folders (the user's file, each folder's `.openvaala/config.toml`, markdown
agents and skills), reloaded when they change. One runtime host serves several projects, so the
file-based definitions are per set of workspace folders."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from openvaala_lsp.config import ConfigError, DefinitionsWatcher, LoadedDefinitions
from openvaala_lsp.definitions import Definitions
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.hooks.validation import HookDefinitionError

logger = logging.getLogger(__name__)

FolderKey = tuple[str, ...]


class DefinitionsSource:
    def __init__(
        self,
        *,
        config_dir: Path | None = None,
        on_change: Callable[[FolderKey], None] | None = None,
        watch_interval: float = 1.0,
    ) -> None:
        self.explicit: Definitions | None = None
        self._config_dir = config_dir
        self._on_change = on_change
        self._interval = watch_interval
        self._watchers: dict[FolderKey, DefinitionsWatcher] = {}
        self._hooks: dict[int, tuple[Definitions, HookRunner]] = {}

    def for_folders(self, folders: FolderKey) -> Definitions:
        if self.explicit is not None:
            return self.explicit
        loaded = self._watcher(folders).current
        return loaded.definitions if loaded is not None else Definitions()

    def errors(self, folders: FolderKey) -> list[ConfigError]:
        loaded = self._watcher(folders).current if self.explicit is None else None
        return list(loaded.errors) if loaded is not None else []

    def hooks(self, definitions: Definitions) -> HookRunner:
        """One runner per definitions set (kept while the set is in use)."""
        cached = self._hooks.get(id(definitions))
        if cached is not None and cached[0] is definitions:
            return cached[1]
        try:
            runner = HookRunner(definitions.hooks)
        except HookDefinitionError as exc:
            logger.error("hooks not used: %s", exc)
            runner = HookRunner([])
        self._hooks[id(definitions)] = (definitions, runner)
        return runner

    def _watcher(self, folders: FolderKey) -> DefinitionsWatcher:
        watcher = self._watchers.get(folders)
        if watcher is None:
            watcher = DefinitionsWatcher(
                list(folders),
                lambda loaded: self._changed(folders, loaded),
                interval=self._interval,
                config_dir=self._config_dir,
                require_trust=True,
            )
            watcher.start()  # loads now: the first use of a workspace reads its files once
            self._watchers[folders] = watcher
            for error in watcher.current.errors if watcher.current else ():
                logger.warning("configuration: %s", error)
        return watcher

    def _changed(self, folders: FolderKey, loaded: LoadedDefinitions) -> None:
        for error in loaded.errors:
            logger.warning("configuration: %s", error)
        if self._on_change is not None and self.explicit is None:
            self._on_change(folders)

    async def close(self) -> None:
        for watcher in self._watchers.values():
            await watcher.stop()
        self._watchers.clear()
