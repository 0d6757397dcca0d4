"""The log's rate limit (`logs.RepeatLimit`): five lines of a kind a minute, then a count of the rest."""

from __future__ import annotations

import logging
from pathlib import Path

from openvaala_lsp.logs import RepeatLimit, configure_logging


def record(message: str, *args: object, at: float, level: int = logging.ERROR, name: str = "host") -> logging.LogRecord:
    made = logging.LogRecord(name, level, __file__, 1, message, args, None)
    made.created = at
    return made


def test_a_repeated_line_is_let_through_five_times_a_window_then_counted() -> None:
    limit = RepeatLimit(shown=5, window=60.0)
    passed = [
        limit.filter(record("cannot accept a connection (%s)", "Too many open files", at=t / 100)) for t in range(1000)
    ]
    assert passed == [True] * 5 + [False] * 995  # a thousand in ten seconds: five lines
    later = record("cannot accept a connection (%s)", "Too many open files", at=61.0)
    assert limit.filter(later)
    assert later.getMessage().startswith("cannot accept a connection (Too many open files) [995 more like this since ")
    assert later.getMessage().endswith(" were not logged]")
    again = record("cannot accept a connection (%s)", "Too many open files", at=62.0)
    assert limit.filter(again) and again.getMessage() == "cannot accept a connection (Too many open files)"


def test_kinds_are_the_logger_the_level_and_the_message_before_its_arguments() -> None:
    limit = RepeatLimit(shown=1, window=60.0)
    assert limit.filter(record("refused a front (pid %s)", 1, at=0))
    assert not limit.filter(record("refused a front (pid %s)", 2, at=1))  # another pid: the same kind
    assert limit.filter(record("refused a front (pid %s)", 3, at=1, level=logging.WARNING))
    assert limit.filter(record("refused a front (pid %s)", 4, at=1, name="other"))
    assert limit.filter(record("host stopped", at=1))


def test_many_kinds_are_forgotten_rather_than_kept() -> None:
    limit = RepeatLimit(shown=1, window=60.0)
    for n in range(5000):  # messages made with f-strings: each a kind of its own
        assert limit.filter(record(f"line {n}", at=n / 1000))
    assert len(limit.kinds) <= 1000


def test_the_host_log_has_the_limit(tmp_path: Path) -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    level = root.level
    log = tmp_path / "host.log"
    try:
        configure_logging("WARNING", str(log))
        for _ in range(100):
            logging.getLogger("openvaala_lsp.host.server").error("cannot accept a connection (%s)", "EMFILE")
    finally:
        for handler in root.handlers[len(before) :]:
            handler.close()
            root.removeHandler(handler)
        root.setLevel(level)
    assert log.read_text().count("cannot accept a connection (EMFILE)") == 5
