"""Opening the database file while the rest of the process is still importing: a host would pay for
the imports and for loading DuckDB and opening the file one after the other otherwise. `start` runs the open in a
thread of its own (the opener imports DuckDB there); `DuckDBStorage.open` of the same path takes its
result. Nothing heavy is imported here: not even `concurrent.futures` (with `logging`, ~20 ms of a first
start), so that the thread starts at once."""

from __future__ import annotations

import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_opening: dict[str, Opening] = {}
_lock = threading.Lock()


class Opening:
    """One open under way in its thread; `result` waits for it."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def result(self) -> Any:
        """The opener's result, or its exception raised, once it is done (blocks until then)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def _run(self, opener: Callable[[str], Any], path: str) -> None:
        try:
            self._value = opener(path)
        except BaseException as exc:  # handed to whoever takes it
            self._error = exc
        finally:
            self._done.set()


def start(path: str, opener: Callable[[str], Any]) -> None:
    """Begins `opener(path)` (`opening.connect_file`, imported by it) in the background."""
    opening = Opening()
    with _lock:
        _opening[os.path.realpath(path)] = opening
    threading.Thread(target=opening._run, args=(opener, path), name="database open", daemon=True).start()


def take(key: str) -> Opening | None:
    """The open begun for the real path `key`, if any (once)."""
    with _lock:
        return _opening.pop(key, None)
