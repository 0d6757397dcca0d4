"""HTTP/1.1 for model streams: httpx's client API over a transport that hands a streamed body up in
the pieces the socket delivered, not one piece per chunk of the chunked coding.

Why: a model sends one SSE event per HTTP chunk. Through httpcore each chunk is one h11 event carried
up six async generators; py-spy of the host on a 2000-delta turn put that at half of the stream's CPU,
which made the turn's end trail the model's last byte. Here h11 writes the request and reads the
response head; the body is decoded in bulk (chunked, by length, or to the close), so a read that
brought forty events costs one pass, not forty.

Everything above the transport is httpx's: auth, redirects (none are followed), content decoding,
the exception tree. An origin reached through a proxy keeps httpx's own transport (`for_url`).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable

import h11
import httpx

READ_SIZE = 64 * 1024
KEEPALIVE_SECONDS = 5.0  # httpx's default keep-alive expiry
MAX_IDLE_PER_ORIGIN = 8
MAX_LINE = 64 * 1024  # a chunk-size or trailer line; anything longer is not HTTP
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_NO_BODY_STATUS = (204, 304)

Origin = tuple[str, str, int]
Headers = Iterable[tuple[bytes, bytes]]


def for_url(url: str) -> httpx.AsyncBaseTransport | None:
    """The transport for a client of `url`, or None (httpx's own) when the environment routes it
    through a proxy, which httpx reads and honours only with its own transport."""
    parsed = httpx.URL(url)
    proxies = urllib.request.getproxies_environment()
    if (parsed.scheme in proxies or "all" in proxies) and not urllib.request.proxy_bypass(parsed.host):
        return None
    return StreamTransport()


class StreamTransport(httpx.AsyncBaseTransport):
    """Keep-alive connections per origin (idle ones closed after `KEEPALIVE_SECONDS`, as httpx does);
    a request that fails on a reused connection before any answer is sent again on a new one."""

    def __init__(self) -> None:
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}", request=request)
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        while True:
            connection = self._take(origin)
            reused = connection is not None
            if connection is None:
                tls = self._context() if origin[0] == "https" else None
                connection = await _Connection.open(origin, tls, timeouts, request)
            try:
                return await connection.exchange(request, body, timeouts, self._release)
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                connection.close()
                if not (reused and not connection.answered):
                    raise
                # the server had closed the idle connection: once more, on a new one
            except BaseException:
                connection.close()
                raise

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:  # certificates load on the first TLS connection (~30 ms)
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if now - connection.idle_since < KEEPALIVE_SECONDS and connection.usable():
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)


class _Connection:
    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.answered = False  # a byte of the current response arrived
        self.idle_since = 0.0
        self.request: httpx.Request | None = None
        self.read_seconds: float | None = None  # httpx's read timeout: the longest wait for a socket read

    @classmethod
    async def open(
        cls, origin: Origin, tls: ssl.SSLContext | None, timeouts: dict[str, float | None], request: httpx.Request
    ) -> _Connection:
        _, host, port = origin
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None, limit=READ_SIZE
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None
        return cls(origin, reader, writer)

    def usable(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())  # at_eof: the server closed it

    def close(self) -> None:
        self.writer.close()

    async def read(self) -> bytes:
        try:
            if self.read_seconds is None:
                return await self.reader.read(READ_SIZE)
            async with asyncio.timeout(self.read_seconds):
                return await self.reader.read(READ_SIZE)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response", request=self.request) from None
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=self.request) from None

    async def exchange(
        self, request: httpx.Request, body: bytes, timeouts: dict[str, float | None], release: Release
    ) -> httpx.Response:
        self.request = request
        self.read_seconds = timeouts.get("read")
        self.answered = False
        state = h11.Connection(h11.CLIENT)
        try:
            head = h11.Request(method=request.method, target=request.url.raw_path, headers=request.headers.raw)
            events = [head, h11.Data(data=body), h11.EndOfMessage()] if body else [head, h11.EndOfMessage()]
            data = b"".join(state.send(event) or b"" for event in events)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from None
        self.writer.write(data)
        try:
            async with asyncio.timeout(timeouts.get("write")):
                await self.writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from None
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from None
        response = await self._head(state)
        leftover, _ = state.trailing_data
        headers = response.headers
        framing = _framing(request.method, response.status_code, headers)
        keep = response.http_version == b"1.1" and not _closes(headers) and not _closes(request.headers.raw)
        stream = _Body(self, framing, leftover, release if keep else None)
        return httpx.Response(
            status_code=response.status_code,
            headers=headers.raw_items(),
            stream=stream,
            extensions={"http_version": b"HTTP/" + response.http_version, "reason_phrase": response.reason},
        )

    async def _head(self, state: h11.Connection) -> h11.Response:
        while True:
            try:
                event = state.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=self.request) from None
            if event is h11.NEED_DATA:
                data = await self.read()
                if data:
                    self.answered = True
                elif state.their_state is h11.SEND_RESPONSE:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response.", request=self.request
                    )
                state.receive_data(data)
            elif isinstance(event, h11.Response):
                return event
            elif isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=self.request)
            # an InformationalResponse (1xx) is followed by the real one


Release = Callable[[_Connection], None]


class _Body(httpx.AsyncByteStream):
    def __init__(
        self,
        connection: _Connection,
        framing: _Framing,
        leftover: bytes,
        release: Release | None,
    ) -> None:
        self._connection = connection
        self._framing = framing
        self._leftover = leftover
        self._release = release
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        framing, data = self._framing, self._leftover
        self._leftover = b""
        while True:
            if data:
                piece = framing.feed(data)
                if piece:
                    yield piece
            if framing.done:
                return
            data = await self._connection.read()
            if not data:
                framing.end(self._connection.request)
                return

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        connection = self._connection
        if self._release is not None and self._framing.done and self._framing.clean and connection.usable():
            self._release(connection)
        else:
            connection.close()


class _Framing:
    """How the body ends. `feed` returns the body bytes in `data`; `done` once the body is whole;
    `clean` when nothing followed it (a connection with stray bytes is not reused)."""

    done = False
    clean = True

    def feed(self, data: bytes) -> bytes:
        raise NotImplementedError

    def end(self, request: httpx.Request | None) -> None:
        """The server closed the connection."""
        if not self.done:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body", request=request
            )


class _NoBody(_Framing):
    done = True

    def feed(self, data: bytes) -> bytes:
        self.clean = False
        return b""


class _Length(_Framing):
    def __init__(self, length: int) -> None:
        self._left = length
        self.done = length == 0

    def feed(self, data: bytes) -> bytes:
        if len(data) > self._left:
            self.clean = False
            data = data[: self._left]
        self._left -= len(data)
        self.done = self._left == 0
        return data


class _UntilClose(_Framing):
    clean = False  # the close is the end: never reused

    def feed(self, data: bytes) -> bytes:
        return data

    def end(self, request: httpx.Request | None) -> None:
        self.done = True


class _Chunked(_Framing):
    """The chunked transfer coding (RFC 9112 §7.1) over whatever the socket delivered: every chunk
    whole or in part in `data` comes out joined, the size lines, extensions and trailers dropped."""

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # data bytes of the current chunk still to come
        self._crlf = False  # the CRLF that ends a chunk's data is next
        self._trailers = False  # after the last chunk: trailer lines until an empty one

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        size = len(buffer)
        position = 0
        out: list[bytes] = []
        while not self.done:
            if self._left:
                end = min(size, position + self._left)
                if end == position:
                    break
                out.append(buffer[position:end])
                self._left -= end - position
                position = end
                if self._left:
                    break
                self._crlf = True
            if self._crlf:
                if size - position < 2:
                    break
                if buffer[position : position + 2] != b"\r\n":
                    raise httpx.RemoteProtocolError("malformed chunked body: no CRLF after a chunk's data")
                position += 2
                self._crlf = False
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                if size - position > MAX_LINE:
                    raise httpx.RemoteProtocolError("malformed chunked body: a line longer than 64 KiB")
                break
            line = buffer[position:line_end]
            position = line_end + 2
            if self._trailers:
                self.done = not line  # trailer fields are not used
                continue
            if not line or line.strip(_HEX_DIGITS) or len(line) > 16:  # not the usual bare size: the long way
                digits = line.split(b";", 1)[0].strip(b" \t")
                if not _HEX.fullmatch(digits):
                    raise httpx.RemoteProtocolError(f"malformed chunked body: chunk size {bytes(line[:40])!r}")
                line = digits
            self._left = int(line, 16)
            self._trailers = self._left == 0
        self._buffer = buffer[position:]
        if self.done and self._buffer:
            self.clean = False
        return b"".join(out)


def _framing(method: str, status: int, headers: Headers) -> _Framing:
    if method == "HEAD" or status < 200 or status in _NO_BODY_STATUS:
        return _NoBody()
    encodings = [value.lower() for name, value in headers if name == b"transfer-encoding"]
    if encodings:
        return _Chunked()  # h11 accepts no transfer coding but chunked
    lengths = [value for name, value in headers if name == b"content-length"]
    if lengths:
        return _Length(int(lengths[0]))  # h11 checked it: digits, and all copies equal
    return _UntilClose()


def _closes(headers: Headers) -> bool:
    return any(name.lower() == b"connection" and b"close" in value.lower() for name, value in headers)
