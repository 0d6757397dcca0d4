"""A provider's HTTP under httpx's own transport, against a scripted HTTP server on 127.0.0.1: every
framing, keep-alive and its failures, timeouts and the connection limit, content coding, TLS, proxies
from the environment."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from fake_provider import text_response

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import ModelRef
from openvaala_lsp.providers import http
from openvaala_lsp.providers.base import ModelRequest, Provider, ProviderError, TextDelta
from openvaala_lsp.providers.errors import DeadlineExceeded
from openvaala_lsp.providers.factory import make_provider
from openvaala_lsp.providers.http import ProviderTimeouts
from openvaala_lsp.providers.retry import RetryPolicy

Script = Callable[[int], list[bytes | float | None]]  # per request number: writes, pauses (s), None = close
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class ScriptedServer:
    """Answers the n-th request with `script(n)`: bytes are written, a float pauses, None closes."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
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
                await reader.readexactly(length)
                self.heads.append(head)
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


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    yield


class NoWait:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def provider(url: str, *, retries: int = 0, sleep: NoWait | None = None, **timeouts: float) -> Provider:
    definition = ModelDefinition(ref=ModelRef(provider="p", name="m"), api="openai-chat", base_url=url + "/v1")
    retry = RetryPolicy(max_retries=retries, sleep=sleep or NoWait(), jitter=lambda: 1.0)
    return make_provider(definition, {}, ProviderTimeouts(**timeouts), retry=retry)


async def answer_of(model: Provider) -> str:
    return "".join(
        [event.text async for event in model.stream(ModelRequest(model="m")) if isinstance(event, TextDelta)]
    )


async def failure_of(model: Provider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await answer_of(model)
    return caught.value


def events(text: str) -> list[bytes]:
    """A whole Chat Completions stream answering `text`, an SSE event a piece."""
    return [data for _, data in text_response("openai-chat", text).frames]


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def answer(text: str) -> bytes:
    return HEAD_CHUNKED + chunked(*events(text))


async def test_every_framing_of_a_stream() -> None:
    body = b"".join(events("hello world"))

    def script(n: int) -> list[bytes | float | None]:
        if n == 1:
            return [b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body[:20], 0.01, body[20:]]
        if n == 2:
            return [HEAD_CHUNKED + chunked(*events("one by one"))]
        return [b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + body[:30], 0.01, body[30:], None]

    async with scripted(script) as server:
        model = provider(server.url)
        assert [await answer_of(model) for _ in range(3)] == ["hello world", "one by one", "hello world"]
        await model.aclose()
    assert server.connections == 1  # the length-delimited and chunked answers left the connection reusable


async def test_keep_alive_serves_many_calls_on_one_connection() -> None:
    async with scripted(lambda n: [answer(f"answer {n}")]) as server:
        model = provider(server.url)
        assert [await answer_of(model) for _ in range(5)] == [f"answer {n}" for n in range(1, 6)]
        await model.aclose()
    assert (server.connections, server.requests) == (1, 5)


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # no `connection: close`: the client only learns of the close from the socket
    async with scripted(lambda n: [answer(f"answer {n}"), 0.01, None]) as server:
        model = provider(server.url)
        first = await answer_of(model)
        await asyncio.sleep(0.05)
        second = await answer_of(model)
        await model.aclose()
    assert (first, second) == ("answer 1", "answer 2")
    assert server.connections == 2


async def test_a_call_the_server_hangs_up_on_when_its_connection_is_reused_is_retried() -> None:
    # the race every keep-alive client meets: the server closes an idle connection as a request goes out
    def script(n: int) -> list[bytes | float | None]:
        return [None] if n == 2 else [answer(f"answer {n}")]

    sleep = NoWait()
    async with scripted(script) as server:
        model = provider(server.url, retries=2, sleep=sleep)
        assert await answer_of(model) == "answer 1"
        assert await answer_of(model) == "answer 3"  # the retry policy sends it again, on a new connection
        await model.aclose()
    assert (server.connections, server.requests, sleep.delays) == (2, 3, [0.5])


async def test_a_server_that_hangs_up_without_answering_is_a_connection_error() -> None:
    async with scripted(lambda n: [None]) as server:
        failure = await failure_of(provider(server.url))
    assert (failure.kind, failure.retryable) == ("connection", True)
    assert "Server disconnected without sending a response" in failure.message
    assert server.requests == 1


async def test_a_truncated_stream_is_a_lost_connection_and_the_next_call_gets_a_new_one() -> None:
    def script(n: int) -> list[bytes | float | None]:
        if n == 1:
            return [HEAD_CHUNKED + chunked(*events("fine"))[:-30], None]
        return [answer("fine")]

    async with scripted(script) as server:
        model = provider(server.url)
        failure = await failure_of(model)
        assert await answer_of(model) == "fine"
        await model.aclose()
    assert failure.kind == "connection" and failure.message.startswith("connection lost mid-stream")
    assert server.connections == 2


async def test_no_answer_within_the_read_timeout() -> None:
    async with scripted(lambda n: [5.0]) as server:
        failure = await failure_of(provider(server.url, read=0.1))
    assert isinstance(failure, DeadlineExceeded) and failure.deadline == "read"


async def test_a_silent_stream_hits_the_read_timeout() -> None:
    silent: list[bytes | float | None] = [HEAD_CHUNKED + chunked(*events("x")[:2])[:-5], 5.0]
    async with scripted(lambda n: silent) as server:
        failure = await failure_of(provider(server.url, read=0.1))
    assert isinstance(failure, DeadlineExceeded) and failure.deadline == "read"


async def test_a_refused_connection() -> None:
    async with scripted(lambda n: []) as server:
        url = server.url
    failure = await failure_of(provider(url))  # the server is gone
    assert failure.kind == "connection" and "ConnectError" in failure.message


async def test_calls_past_the_connection_limit_wait_for_the_pool_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "LIMITS", httpx.Limits(max_connections=1))
    held = asyncio.Event()

    def script(n: int) -> list[bytes | float | None]:
        return [HEAD_CHUNKED + chunked(*events("x")[:2])[:-5], 5.0] if n == 1 else []  # the text, then nothing

    async with scripted(script) as server:
        model = provider(server.url, pool=0.1)

        async def hold() -> None:
            async for _ in model.stream(ModelRequest(model="m")):
                held.set()

        holding = asyncio.create_task(hold())
        await held.wait()
        failure = await failure_of(model)
        holding.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await holding
        await model.aclose()
    assert isinstance(failure, DeadlineExceeded) and failure.deadline == "pool"
    assert server.requests == 1


async def test_content_coding_is_decoded() -> None:
    packed = gzip.compress(b"".join(events("compressed answer")))
    head = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(packed)
    async with scripted(lambda n: [head + packed]) as server:
        assert await answer_of(provider(server.url)) == "compressed answer"


@pytest.fixture
def certificates(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    """The server's TLS, with a certificate signed by nobody this machine trusts, and that signer's file."""
    authority = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_tls)
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    return server_tls, tmp_path / "ca.pem"


async def test_tls_verified_against_the_certificates_httpx_trusts(
    certificates: tuple[ssl.SSLContext, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server_tls, authority = certificates
    async with scripted(lambda n: [answer(f"secret {n}")], tls=server_tls) as server:
        url = server.url.replace("http://", "https://")
        failure = await failure_of(provider(url))
        assert failure.kind == "connection" and "CERTIFICATE_VERIFY_FAILED" in failure.message
        monkeypatch.setenv("SSL_CERT_FILE", str(authority))  # as httpx reads it
        model = provider(url)
        assert [await answer_of(model), await answer_of(model)] == ["secret 1", "secret 2"]
        await model.aclose()
    assert server.connections == 1  # one connection kept alive for both (the refused one never got past TLS)


class Proxy:
    """An HTTP proxy: a CONNECT tunnel to the origin asked for, or a plain request forwarded to the origin."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        method, target, _ = head.split(b" ", 2)
        authority = target if method == b"CONNECT" else httpx.URL(target.decode()).netloc
        host, port = authority.decode().rsplit(":", 1)
        origin_reader, origin_writer = await asyncio.open_connection(host, int(port))
        if method == b"CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            origin_writer.write(head)
        await asyncio.gather(self.pipe(reader, origin_writer), self.pipe(origin_reader, writer))

    @staticmethod
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def proxy() -> AsyncIterator[tuple[Proxy, str]]:
    proxied = Proxy()
    server = await asyncio.start_server(proxied.handle, "127.0.0.1", 0)
    try:
        yield proxied, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_proxy_from_the_environment_and_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted(lambda n: [answer(f"answer {n}")]) as server, proxy() as (proxied, proxy_url):
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        assert await answer_of(provider(server.url)) == "answer 1"
        assert proxied.heads[0].startswith(b"POST " + server.url.encode() + b"/v1/chat/completions HTTP/1.1")
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert await answer_of(provider(server.url)) == "answer 2"
    assert len(proxied.heads) == 1


async def test_tls_through_a_proxy_is_verified_the_same(
    certificates: tuple[ssl.SSLContext, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server_tls, authority = certificates
    async with scripted(lambda n: [answer("tunnelled")], tls=server_tls) as server, proxy() as (proxied, proxy_url):
        url = server.url.replace("http://", "https://")
        monkeypatch.setenv("HTTPS_PROXY", proxy_url)
        failure = await failure_of(provider(url))
        assert failure.kind == "connection" and "CERTIFICATE_VERIFY_FAILED" in failure.message
        monkeypatch.setenv("SSL_CERT_FILE", str(authority))
        assert await answer_of(provider(url)) == "tunnelled"
    authority_line = b"CONNECT " + url.removeprefix("https://").encode()
    assert [head.split(b" HTTP/")[0] for head in proxied.heads] == [authority_line, authority_line]
