"""Incremental decoders for the two streaming body formats: Server-Sent Events and NDJSON.

Both take raw bytes as they arrive from the socket (any chunk boundary, including inside a multi-byte
UTF-8 character or between the CR and LF of a line end) and return the complete frames seen so far.
"""

from __future__ import annotations

import codecs
import re

import attrs

DEFAULT_MAX_FRAME_CHARS = 1024 * 1024  # the same 1 MiB cap httpx2's EventSource uses

_LINE_END = re.compile(r"\r\n|\r|\n")


class FrameTooLarge(ValueError):
    """One event (or NDJSON line) grew past the size cap; the stream cannot be trusted further."""


@attrs.define(kw_only=True)  # not frozen: one per event of a stream, and a frozen init is ~50% slower
class SSEEvent:
    event: str = "message"  # the `event:` field; "message" when absent, as the SSE spec says
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """The SSE field grammar (WHATWG HTML, "event stream interpretation"), fed incrementally.

    Comments (lines starting with ':') are counted but produce no event, so keep-alives never look
    like progress. Unknown fields are ignored. An event with no `data:` line is not dispatched.
    """

    def __init__(self, max_event_chars: int = DEFAULT_MAX_FRAME_CHARS) -> None:
        self._max = max_event_chars
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""  # text not yet ended by a line break
        self._started = False  # whether the optional leading BOM was checked
        self._event = ""
        self._data: list[str] = []
        self._data_chars = 0
        self._id: str | None = None
        self._retry: int | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        return self._take(self._utf8.decode(chunk))

    def finish(self) -> list[SSEEvent]:
        """End of body. Servers that omit the final blank line still get their last event through:
        the spec would drop it, but a lost `[DONE]` would turn a good stream into an error."""
        events = self._take(self._utf8.decode(b"", final=True))
        if self._buffer:
            self._line(self._buffer.removesuffix("\r"), events)
            self._buffer = ""
        self._line("", events)
        return events

    def _take(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        buffer = self._buffer + text if self._buffer else text
        events: list[SSEEvent] = []
        if "\r" not in buffer:  # the usual case, split without a regular expression
            *lines, self._buffer = buffer.split("\n")
            for line in lines:
                # a stream's two usual fields inline: every event has them, some servers no others
                if line.startswith("data: "):
                    self._data.append(line[6:])
                    self._data_chars += len(line) - 5
                    if self._data_chars > self._max:
                        raise FrameTooLarge(f"server-sent event larger than {self._max} characters")
                elif line.startswith("event: "):
                    self._event = line[7:]
                else:
                    self._line(line, events)
            if len(self._buffer) + self._data_chars > self._max:
                raise FrameTooLarge(f"server-sent event larger than {self._max} characters")
            return events
        position = 0
        for match in _LINE_END.finditer(buffer):
            # A CR at the very end may be the first half of a CRLF split across chunks: wait.
            if match.group() == "\r" and match.end() == len(buffer):
                break
            self._line(buffer[position : match.start()], events)
            position = match.end()
        self._buffer = buffer[position:]
        if len(self._buffer) + self._data_chars > self._max:
            raise FrameTooLarge(f"server-sent event larger than {self._max} characters")
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            self.comments += 1
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._data_chars += len(value) + 1
            if self._data_chars > self._max:
                raise FrameTooLarge(f"server-sent event larger than {self._max} characters")
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "retry":
            if value.isdigit():
                self._retry = int(value)
        # Any other field name is reserved for future use and ignored.

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data:
            events.append(
                SSEEvent(event=self._event or "message", data="\n".join(self._data), id=self._id, retry=self._retry)
            )
        self._event = ""
        self._data = []
        self._data_chars = 0
        self._retry = None


class NDJSONDecoder:
    """Newline-delimited JSON (Ollama's native stream): one JSON text per line, blank lines skipped.

    Lines are split on raw bytes before decoding, which is safe because UTF-8 never uses the byte
    0x0A inside a multi-byte character.
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_FRAME_CHARS) -> None:
        self._max = max_line_bytes
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        if b"\n" not in chunk:
            if len(self._buffer) > self._max:
                raise FrameTooLarge(f"NDJSON line larger than {self._max} bytes")
            return []
        *complete, rest = self._buffer.split(b"\n")
        self._buffer = bytearray(rest)
        if len(self._buffer) > self._max:
            raise FrameTooLarge(f"NDJSON line larger than {self._max} bytes")
        return [line for line in (self._decode(raw) for raw in complete) if line]

    def finish(self) -> list[str]:
        line = self._decode(self._buffer)
        self._buffer.clear()
        return [line] if line else []

    def _decode(self, raw: bytes | bytearray) -> str:
        if len(raw) > self._max:
            raise FrameTooLarge(f"NDJSON line larger than {self._max} bytes")
        return raw.decode("utf-8", errors="replace").strip()
