"""The model-stream transport (providers/transport.py) under httpx, against a scripted HTTP server on
127.0.0.1: bodies in socket-sized pieces, every framing, keep-alive and its failures, timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
import trustme

from openvaala_lsp.providers import transport
from openvaala_lsp.providers.transport import StreamTransport, _Chunked

Script = Callable[[int], list[bytes | float | None]]  # per request number: writes, pauses (s), None = close


class ScriptedServer:
    """Answers the n-th request with `script(n)`: bytes are written, a float pauses, None closes."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests = 0
        self.bodies: list[bytes] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next((int(line[15:]) for line in lines if line.startswith(b"content-length:")), 0)
                self.bodies.append(await reader.readexactly(length))
                self.requests += 1
                for step in self.script(self.requests):
                    if step is None:
                        writer.close()
                        return
                    if isinstance(step, float):
                        await asyncio.sleep(step)
                    else:
                        writer.write(step)
                        await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def scripted(script: Script, tls: ssl.SSLContext | None = None) -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer(script)
    server.server = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
    try:
        yield server
    finally:
        server.server.close()


def client(url: str, **timeouts: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        transport=StreamTransport(),
        timeout=httpx.Timeout(5.0, **timeouts),
    )


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENTS = [b'data: {"n": %d}\n\n' % n for n in range(500)]


async def pieces(response: httpx.Response) -> list[bytes]:
    return [piece async for piece in response.aiter_raw()]


async def test_a_chunked_stream_comes_up_in_socket_pieces_not_chunk_by_chunk() -> None:
    async with scripted(lambda n: [HEAD_CHUNKED + chunked(*EVENTS)]) as server, client(server.url) as http:
        async with http.stream("POST", "/v1/chat", json={"stream": True}) as response:
            got = await pieces(response)
    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
    assert b"".join(got) == b"".join(EVENTS)
    assert len(got) < len(EVENTS) / 10  # 500 chunks, a handful of reads
    assert server.bodies == [b'{"stream":true}']


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7, 64])
def test_chunked_decoding_at_any_split(split: int) -> None:
    body = b"5;ext=1\r\nhello\r\n1 \r\n \r\nB\r\nworld, done\r\n0\r\nx-trailer: 1\r\n\r\n"
    decoder = _Chunked()
    out = b"".join(decoder.feed(body[i : i + split]) for i in range(0, len(body), split))
    assert out == b"hello world, done"
    assert decoder.done and decoder.clean


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n",
        b"0_5\r\nhello\r\n",  # int() would take it
        b"00000000000000005\r\nhello\r\n",  # 17 digits
        b"\r\nhello\r\n",
    ],
    ids=["not hex", "no CRLF after data", "0x prefix", "sign", "underscore", "too long", "empty"],
)
def test_malformed_chunked_bodies_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="malformed chunked body"):
        _Chunked().feed(body)


async def test_content_length_and_close_delimited_bodies() -> None:
    def script(n: int) -> list[bytes | float | None]:
        if n == 1:
            return [b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello", 0.01, b" world"]
        return [b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil", 0.01, b" the close", None]

    async with scripted(script) as server, client(server.url) as http:
        first = await http.post("/a", content=b"x")
        second = await http.post("/b", content=b"y")
    assert (first.text, second.text) == ("hello world", "until the close")
    assert server.connections == 1  # the length-delimited answer left the connection reusable


async def test_keep_alive_serves_many_requests_on_one_connection() -> None:
    async with scripted(lambda n: [HEAD_CHUNKED + chunked(b"answer %d" % n)]) as server, client(server.url) as http:
        texts = [(await http.post("/v1/chat", json={"n": n})).text for n in range(1, 6)]
    assert texts == [f"answer {n}" for n in range(1, 6)]
    assert (server.connections, server.requests) == (1, 5)


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # no `connection: close`: the client only learns of the close from the socket
    async with scripted(lambda n: [HEAD_CHUNKED + chunked(b"answer %d" % n), 0.01, None]) as server:
        async with client(server.url) as http:
            first = await http.post("/v1/chat", content=b"1")
            await asyncio.sleep(0.05)
            second = await http.post("/v1/chat", content=b"2")
    assert (first.text, second.text) == ("answer 1", "answer 2")
    assert server.connections == 2


async def test_a_request_the_server_hangs_up_on_when_reused_is_sent_again_on_a_new_connection() -> None:
    # the race every keep-alive client meets: the server closes an idle connection as a request goes out
    def script(n: int) -> list[bytes | float | None]:
        return [None] if n == 2 else [HEAD_CHUNKED + chunked(b"answer %d" % n)]

    async with scripted(script) as server, client(server.url) as http:
        assert (await http.post("/v1/chat", content=b"1")).text == "answer 1"
        assert (await http.post("/v1/chat", content=b"2")).text == "answer 3"
    assert (server.connections, server.bodies) == (2, [b"1", b"2", b"2"])


async def test_a_new_connection_hung_up_on_is_an_error_not_a_retry() -> None:
    async with scripted(lambda n: [None]) as server, client(server.url) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.post("/v1/chat", content=b"1")
    assert server.requests == 1


async def test_a_truncated_stream_is_a_protocol_error_and_its_connection_is_dropped() -> None:
    def script(n: int) -> list[bytes | float | None]:
        if n == 1:
            return [HEAD_CHUNKED + b"5\r\nhel", None]
        return [HEAD_CHUNKED + chunked(b"fine")]

    async with scripted(script) as server, client(server.url) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await http.post("/v1/chat", content=b"1")
        assert (await http.post("/v1/chat", content=b"2")).text == "fine"
    assert server.connections == 2


async def test_a_body_left_early_closes_its_connection() -> None:
    def script(n: int) -> list[bytes | float | None]:
        if n == 1:
            return [HEAD_CHUNKED + b"5\r\nfirst\r\n", 0.2, chunked(b" rest")]
        return [HEAD_CHUNKED + chunked(b"next")]

    async with scripted(script) as server, client(server.url) as http:
        async with http.stream("POST", "/v1/chat", content=b"1") as response:
            async for piece in response.aiter_raw():
                assert piece == b"first"
                break
        assert (await http.post("/v1/chat", content=b"2")).text == "next"
    assert server.connections == 2


async def test_no_answer_within_the_read_timeout() -> None:
    async with scripted(lambda n: [5.0]) as server, client(server.url, read=0.1) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post("/v1/chat", content=b"1")


async def test_a_silent_stream_hits_the_read_timeout() -> None:
    silent: list[bytes | float | None] = [HEAD_CHUNKED + b"5\r\nfirst\r\n", 5.0]
    async with scripted(lambda n: silent) as server, client(server.url, read=0.1) as http:
        async with http.stream("POST", "/v1/chat", content=b"1") as response:
            with pytest.raises(httpx.ReadTimeout):
                await pieces(response)


async def test_a_refused_connection() -> None:
    async with scripted(lambda n: []) as server:
        url = server.url
    async with client(url) as http:  # the server is gone
        with pytest.raises(httpx.ConnectError):
            await http.post("/v1/chat", content=b"1")


async def test_content_encoding_is_decoded_by_httpx_above_the_transport() -> None:
    packed = gzip.compress(b"compressed answer")
    head = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(packed)
    async with scripted(lambda n: [head + packed]) as server, client(server.url) as http:
        assert (await http.post("/v1/chat", content=b"1")).text == "compressed answer"


async def test_tls_verified_against_the_certificates_httpx_would_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authority = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_tls)
    async with scripted(lambda n: [HEAD_CHUNKED + chunked(*EVENTS)], tls=server_tls) as server:
        url = server.url.replace("http://", "https://")
        async with client(url) as http:  # the certificate is signed by nobody this machine trusts
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.post("/v1/chat", content=b"1")
        authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # as httpx's own transport reads it
        async with client(url) as http:
            async with http.stream("POST", "/v1/chat", content=b"2") as response:
                got = await pieces(response)
            assert b"".join(got) == b"".join(EVENTS)
            assert (await http.post("/v1/chat", content=b"3")).status_code == 200
    assert server.connections == 1  # one connection kept alive for both (the refused one never got past TLS)


def test_a_proxied_origin_keeps_httpx_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert isinstance(transport.for_url("https://api.openai.com/v1"), StreamTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert transport.for_url("https://api.openai.com/v1") is None  # httpx reads and honours the proxy
    assert isinstance(transport.for_url("http://127.0.0.1:8080/v1"), StreamTransport)
    assert isinstance(transport.for_url("https://127.0.0.1:8080/v1"), StreamTransport)
