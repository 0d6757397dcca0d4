"""Bounded output: keep the head and the tail, say what was left out in between.

The start of an output usually says what ran and the end says how it finished, so both are kept
and the middle goes, with a marker "[... N lines / M bytes omitted ...]" counting what the model
does not see.
"""

from __future__ import annotations

DEFAULT_MAX_OUTPUT = 30_000
"""Bytes of output shown to the model (about as many characters for mostly-ASCII text)."""

DEFAULT_READ_LIMIT = 256 * 1024
"""Bytes kept in memory while a stream is read; everything past it is counted, then dropped."""


def _cut_head(data: bytes) -> bytes:
    """`data` ended at the last line break, if that keeps at least half of it."""
    newline = data.rfind(b"\n")
    return data[: newline + 1] if newline >= len(data) // 2 else data


def _cut_tail(data: bytes, preceding: bytes) -> bytes:
    """`data` started after the first line break, if that keeps at least half of it; unchanged if
    it already starts a line (the byte before it is a line break)."""
    if preceding == b"\n":
        return data
    newline = data.find(b"\n")
    return data[newline + 1 :] if 0 <= newline < len(data) // 2 else data


def omission_marker(lines: int, size: int) -> str:
    return f"[... {lines} lines / {size} bytes omitted ...]"


class HeadTailBuffer:
    """Collects a byte stream of any length in bounded memory: the first and last `limit / 2`
    bytes are kept, the rest only counted. Feeding never blocks, so a reader can go on draining a
    pipe long after the cap is reached."""

    def __init__(self, limit: int = DEFAULT_READ_LIMIT) -> None:
        self._half = max(limit // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self.total_lines = 0  # line breaks seen

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self.total_lines += data.count(b"\n")
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            excess = len(self._tail) - self._half
            if excess > 0:
                del self._tail[:excess]

    def render(self, max_output: int = DEFAULT_MAX_OUTPUT) -> str:
        """The text, at most about `max_output` bytes of it, head and tail around a marker."""
        complete = self.total_bytes == len(self._head) + len(self._tail)
        if complete and self.total_bytes <= max_output:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        half = max(max_output // 2, 1)
        known = bytes(self._head + self._tail) if complete else bytes(self._tail)
        head = bytes(self._head[:half])
        tail = known[-half:]
        preceding = known[-half - 1 : -half] if len(known) > half else b""
        head, tail = _cut_head(head), _cut_tail(tail, preceding)
        omitted_bytes = self.total_bytes - len(head) - len(tail)
        omitted_lines = self.total_lines - head.count(b"\n") - tail.count(b"\n")
        head_text = head.decode("utf-8", errors="replace")
        if head_text and not head_text.endswith("\n"):
            head_text += "\n"
        marker = omission_marker(omitted_lines, omitted_bytes)
        return f"{head_text}{marker}\n{tail.decode('utf-8', errors='replace')}"


def truncate_text(text: str, max_output: int = DEFAULT_MAX_OUTPUT) -> str:
    """`text` unchanged if short enough, else its head and tail around an omission marker."""
    data = text.encode("utf-8")
    if len(data) <= max_output:
        return text
    buffer = HeadTailBuffer(limit=max(len(data), max_output))
    buffer.feed(data)
    return buffer.render(max_output)
