"""`openvaala demo`'s waiting line: until the model's first word it says what it waits for and for
how long, rewritten in place on a terminal, a line now and then into a file, and gone when the answer
starts. (tests/e2e/test_local_model.py runs the demo itself with the embedded model.)"""

from __future__ import annotations

import asyncio
import io

import pytest

from openvaala_lsp.cli import demo


async def ticks(out: io.StringIO, count: int) -> None:
    """Until `out` holds `count` waiting lines (a loaded machine may tick late; 5 s bound it)."""
    for _ in range(500):
        if out.getvalue().count("waiting for the model") >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {count} waiting lines: {out.getvalue()!r}")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_into_a_file_a_line_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "LOG_TICK_SECONDS", 0.05)
    out = io.StringIO()
    waiting = demo.Waiting(out)
    waiting.start()
    await ticks(out, 2)
    waiting.stop()
    lines = out.getvalue().splitlines()
    assert all(line.startswith("waiting for the model (its server starts") for line in lines)
    assert "\r" not in out.getvalue() and lines[0].endswith(": 0 s")
    written = out.getvalue()
    await asyncio.sleep(0.1)
    assert out.getvalue() == written  # stopped: nothing more


async def test_on_a_terminal_one_line_rewritten_then_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "TICK_SECONDS", 0.05)
    out = Terminal()
    waiting = demo.Waiting(out)
    waiting.start()
    await ticks(out, 2)
    waiting.stop()
    text = out.getvalue()
    assert "\n" not in text and text.count("\r\033[Kwaiting for the model") >= 2
    assert text.endswith("\r\033[K")  # the answer starts on a clean line


async def test_an_answer_before_the_first_tick_shows_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    out = Terminal()
    waiting = demo.Waiting(out)
    waiting.start()
    waiting.stop()
    await asyncio.sleep(0)
    assert out.getvalue() == ""
