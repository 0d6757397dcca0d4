"""Opening the database file while the rest of the process is still importing: a host would pay for
the imports and for loading DuckDB and opening the file one after the other otherwise. `start` runs the open in a
thread of its own (the opener imports DuckDB there); `DuckDBStorage.open` of the same path takes its
result. Nothing heavy is imported here."""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable
from typing import Any

_opening: dict[str, concurrent.futures.Future[Any]] = {}
_lock = threading.Lock()


def start(path: str, opener: Callable[[str], Any]) -> None:
    """Begins `opener(path)` (`opening.connect_file`, imported by it) in the background."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def work() -> None:
        try:
            future.set_result(opener(path))
        except BaseException as exc:  # handed to whoever takes it
            future.set_exception(exc)

    with _lock:
        _opening[os.path.realpath(path)] = future
    threading.Thread(target=work, name="database open", daemon=True).start()


def take(key: str) -> concurrent.futures.Future[Any] | None:
    """The open begun for the real path `key`, if any (once)."""
    with _lock:
        return _opening.pop(key, None)
