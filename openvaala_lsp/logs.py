"""Where the server processes log: stderr or a file, quiet by default (stdout is the protocol).

What repeats is rate-limited (`RepeatLimit`): a failure that comes back in a loop (a resource that
stays exhausted, a peer that keeps trying) once wrote gigabytes of `host.log` in minutes.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

REPEATS_SHOWN = 5  # lines of one kind let through per window
REPEAT_WINDOW = 60.0  # seconds
MAX_KINDS = 1000  # kinds remembered; past this, those whose window ended (or all) are forgotten


class _Kind:
    __slots__ = ("dropped", "shown", "start")

    def __init__(self, start: float) -> None:
        self.start = start  # of its current window
        self.shown = 1
        self.dropped = 0


class RepeatLimit(logging.Filter):
    """Lets the first `shown` lines of a kind through in each `window` seconds and drops the rest; the
    first line let through after some were dropped says how many. A kind is the logger, the level and
    the message before its arguments (`"refused a front (pid %s)"`), so lines that differ only in a
    pid or a count are one kind."""

    def __init__(self, shown: int = REPEATS_SHOWN, window: float = REPEAT_WINDOW) -> None:
        super().__init__()
        self.shown = shown
        self.window = window
        self.kinds: dict[tuple[str, int, str], _Kind] = {}
        self.lock = threading.Lock()  # threads log too (the storage writer, query threads)

    def filter(self, record: logging.LogRecord) -> bool:
        with self.lock:
            return self._count(record)

    def _count(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        kind = self.kinds.get(key)
        if kind is not None and record.created - kind.start < self.window:
            if kind.shown < self.shown:
                kind.shown += 1
                return True
            kind.dropped += 1
            return False
        if kind is None and len(self.kinds) >= MAX_KINDS:  # messages made with f-strings: each its own kind
            self.kinds = {k: v for k, v in self.kinds.items() if record.created - v.start < self.window}
            if len(self.kinds) >= MAX_KINDS // 2:
                self.kinds.clear()
        self.kinds[key] = _Kind(record.created)
        if kind is not None and kind.dropped:
            try:
                text = record.getMessage()
            except (TypeError, ValueError):  # arguments that do not fit: the handler reports that
                return True
            since = time.strftime("%H:%M:%S", time.localtime(kind.start))
            record.msg = f"{text} [{kind.dropped} more like this since {since} were not logged]"
            record.args = ()
        return True


def configure_logging(level: str, log_file: str | None) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    if level != "DEBUG":
        # HTTP clients log every request at INFO (model calls, MCP over HTTP)
        for name in ("httpx", "httpx2", "httpcore", "httpcore2"):
            logging.getLogger(name).setLevel(logging.WARNING)
