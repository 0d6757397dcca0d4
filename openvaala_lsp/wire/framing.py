"""LSP base-protocol framing, shared by the front and the server: one reader, one set of limits.

Standard library only (the front imports it). `FrameReader` is sans-I/O: feed it bytes as they
arrive, get back whole message bodies and the frames it refused. A refused frame never ends the
stream: a bad header block is skipped up to the next `Content-Length` header (a JSON body can never
contain one, since a JSON string escapes its line breaks), and a body over the message limit is
skipped by its length without being kept in memory. Either way the sender gets an error answer
(`parseError` or `messageTooLarge`) and the next frame is read as usual.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

MAX_MESSAGE_ENV = "OPENVAALA_MAX_MESSAGE_BYTES"
DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8192
MAX_HEADER_LINES = 32
MAX_DEPTH = 100  # nesting of arrays and objects; far beyond any real message
ID_SCAN_BYTES = 4096  # how much of a refused body is searched for its top-level "id"

# JSON-RPC error codes and kinds of the transport (PROTOCOL.md section 5)
PARSE_ERROR = ("parseError", -32700)
INVALID_REQUEST = ("invalidRequest", -32600)
METHOD_NOT_FOUND = ("methodNotFound", -32601)
INVALID_PARAMS = ("invalidParams", -32602)
INTERNAL = ("internal", -32603)
REQUEST_CANCELLED = ("requestCancelled", -32800)
MESSAGE_TOO_LARGE = ("messageTooLarge", -32020)

_HEADER_END = b"\r\n\r\n"
_CONTENT_LENGTH = re.compile(rb"(?i)content-length[ \t]*:")
_CONTENT_LENGTH_TAIL = 15  # len(b"content-length:") - 1: a match may straddle two reads


def max_message_bytes() -> int:
    """The message limit: `OPENVAALA_MAX_MESSAGE_BYTES`, else 64 MiB."""
    try:
        value = int(os.environ.get(MAX_MESSAGE_ENV) or DEFAULT_MAX_MESSAGE)
    except ValueError:
        return DEFAULT_MAX_MESSAGE
    return value if value > 0 else DEFAULT_MAX_MESSAGE


class Refused:
    """A frame the reader did not deliver, and why; `msg_id` is the request's id when it was found."""

    __slots__ = ("code", "kind", "message", "msg_id")

    def __init__(self, error: tuple[str, int], message: str, msg_id: int | str | None = None) -> None:
        self.kind, self.code = error
        self.message = message
        self.msg_id = msg_id

    def response(self) -> dict[str, Any]:
        return error_response(self.msg_id, (self.kind, self.code), self.message)

    def __repr__(self) -> str:
        return f"Refused({self.kind}, {self.message!r}, id={self.msg_id!r})"


class FrameReader:
    """Cuts a byte stream into LSP message bodies (`bytes`) and `Refused` frames."""

    def __init__(self, max_message: int | None = None) -> None:
        self.max_message = max_message  # None: no limit (a trusted peer)
        self._buffer = bytearray()
        self._length: int | None = None  # the body length of the header just read
        self._seeking = False  # after a bad header: discarding until the next Content-Length
        self._skip = 0  # bytes of an oversized body still to discard
        self._skip_prefix = bytearray()  # its first bytes, searched for the request id
        self._skip_reported = False

    def reset(self) -> None:
        self.__init__(self.max_message)  # type: ignore[misc]

    def feed(self, data: bytes) -> list[bytes | Refused]:
        out: list[bytes | Refused] = []
        if self._skip:
            data = self._discard(data, out)
        if data:
            self._buffer += data
        while self._step(out):
            pass
        return out

    def _step(self, out: list[bytes | Refused]) -> bool:
        """Reads one header or one body from the buffer; False when more bytes are needed."""
        buffer = self._buffer
        if self._seeking:
            match = _CONTENT_LENGTH.search(buffer)
            if match is None:
                del buffer[: max(0, len(buffer) - _CONTENT_LENGTH_TAIL)]
                return False
            del buffer[: match.start()]
            self._seeking = False
        if self._length is None:
            end = buffer.find(_HEADER_END, 0, MAX_HEADER_BYTES + len(_HEADER_END))
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    self._refuse_header(out, f"LSP header longer than {MAX_HEADER_BYTES} bytes", 1)
                    return True
                return False
            length, problem = _content_length(bytes(buffer[:end]))
            if problem:
                self._refuse_header(out, problem, end + len(_HEADER_END))
                return True
            del buffer[: end + len(_HEADER_END)]
            assert length is not None
            if self.max_message is not None and length > self.max_message:
                self._skip, self._skip_prefix, self._skip_reported = length, bytearray(), False
                rest = bytes(buffer)
                buffer.clear()
                buffer += self._discard(rest, out)  # empty while the body is still arriving
                return bool(buffer)
            self._length = length
        if len(buffer) < self._length:
            return False
        body = bytes(buffer[: self._length])
        del buffer[: self._length]
        self._length = None
        out.append(body)
        return True

    def _refuse_header(self, out: list[bytes | Refused], problem: str, consumed: int) -> None:
        """Drops the bad header block (or its first byte, when it never ended) and seeks the next."""
        out.append(Refused(PARSE_ERROR, f"parse error: {problem}; skipped to the next Content-Length header"))
        del self._buffer[:consumed]
        self._seeking = True

    def _discard(self, data: bytes, out: list[bytes | Refused]) -> bytes:
        """Consumes the oversized body's bytes from `data`; returns what follows it. The sender hears
        of it once its id is known (or cannot be), not only after the whole body went by."""
        take = min(self._skip, len(data))
        if not self._skip_reported:
            self._skip_prefix += data[: min(take, ID_SCAN_BYTES - len(self._skip_prefix))]
        self._skip -= take
        if not self._skip_reported:
            msg_id = top_level_id(self._skip_prefix)
            if msg_id is not None or len(self._skip_prefix) >= ID_SCAN_BYTES or not self._skip:
                self._skip_reported = True
                message = f"message larger than the limit of {self.max_message} bytes"
                out.append(Refused(MESSAGE_TOO_LARGE, message, msg_id))
                self._skip_prefix = bytearray()
        return data[take:]


def _content_length(header: bytes) -> tuple[int | None, str]:
    """The Content-Length of a header block, or a problem naming what is wrong with it."""
    lines = header.split(b"\r\n")
    if len(lines) > MAX_HEADER_LINES:
        return None, f"more than {MAX_HEADER_LINES} header lines"
    length: int | None = None
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon:
            return None, f"header line without a colon: {_quote(line)}"
        if name.strip().lower() != b"content-length":
            continue  # Content-Type and unknown headers are ignored
        value = value.strip()
        if not value.isdigit() or len(value) > 19:
            return None, f"Content-Length is not a byte count: {_quote(value)}"
        if length is not None and length != int(value):
            return None, "conflicting Content-Length headers"
        length = int(value)
    if length is None:
        return None, "header without Content-Length"
    return length, ""


def _quote(raw: bytes) -> str:
    return repr(raw[:80])


def top_level_id(prefix: bytes | bytearray) -> int | str | None:
    """The `id` of a JSON-RPC message from the first bytes of its body, if it is a top-level key there
    and a string or an integer. Nested keys named "id" (inside params) are not taken."""
    scanner = _Scanner(bytes(prefix))
    try:
        return scanner.top_level_id()
    except (IndexError, ValueError):
        return None


class _Scanner:
    def __init__(self, text: bytes) -> None:
        self.text = text
        self.pos = 0

    def top_level_id(self) -> int | str | None:
        self._ws()
        self._expect(b"{")
        while True:
            self._ws()
            if self.text[self.pos : self.pos + 1] == b"}":
                return None
            key = self._string()
            self._ws()
            self._expect(b":")
            self._ws()
            start = self.pos
            self._value()
            if key == '"id"':
                value = json.loads(self.text[start : self.pos])
                return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
            self._ws()
            if self.text[self.pos : self.pos + 1] != b",":
                return None
            self.pos += 1

    def _ws(self) -> None:
        while self.text[self.pos : self.pos + 1] in (b" ", b"\t", b"\r", b"\n"):
            self.pos += 1

    def _expect(self, char: bytes) -> None:
        if self.text[self.pos : self.pos + 1] != char:
            raise ValueError(char)
        self.pos += 1

    def _string(self) -> str:
        start = self.pos
        self._expect(b'"')
        while True:
            char = self.text[self.pos]
            self.pos += 1
            if char == 0x5C:  # backslash: skip the escaped character
                self.pos += 1
            elif char == 0x22:
                return self.text[start : self.pos].decode("utf-8", "replace")

    def _value(self) -> None:
        """Skips one JSON value; a truncated one raises IndexError."""
        first = self.text[self.pos]
        if first == 0x22:
            self._string()
            return
        if first not in b"[{":
            while self.text[self.pos] not in b",} \t\r\n":
                self.pos += 1
            return
        depth = 0
        while True:
            char = self.text[self.pos]
            if char == 0x22:
                self._string()
                continue
            self.pos += 1
            if char in b"[{":
                depth += 1
            elif char in b"]}":
                depth -= 1
                if depth == 0:
                    return


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def decode(body: bytes) -> Any:
    """JSON of a body, which must be UTF-8 (strictly: json.loads would let surrogates encoded in
    UTF-8 through). NaN and Infinity are refused (they are not JSON, and would be echoed back).
    Raises ValueError, or RecursionError for nesting deeper than Python's decoder allows."""
    return json.loads(body.decode(), parse_constant=_reject_constant)


def too_deep(body: bytes, value: Any) -> bool:
    """Whether `value` (decoded from `body`) nests arrays and objects deeper than MAX_DEPTH."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return False  # the common case, counted at C speed
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values() if isinstance(child, (dict, list)))
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node if isinstance(child, (dict, list)))
    return False


def error_response(msg_id: Any, error: tuple[str, int], message: str, **data: Any) -> dict[str, Any]:
    kind, code = error
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message, "data": {"kind": kind, **data}}}


def frame(message: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """One LSP frame of `message` as `dumps` writes it."""
    return frame_body(dumps(message, default))


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """Compact JSON, UTF-8 as is; a string holding a lone surrogate (valid JSON text, not valid
    UTF-8) is written \\u-escaped instead, so the result is always valid UTF-8 and valid JSON. NaN
    and infinities are refused with ValueError."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=default).encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False, default=default).encode()


def frame_body(body: bytes) -> bytes:
    return header(len(body)) + body


def header(length: int) -> bytes:
    """The header of a frame whose body is `length` bytes (for a writer that sends the body as is)."""
    return b"Content-Length: %d\r\n\r\n" % length
