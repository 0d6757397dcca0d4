"""Shared transport policy of every provider: one long-lived httpx client on httpx's own transport
(its connection pool and limits, keep-alive, proxies from the environment, TLS verification),
retries before the stream starts, typed deadlines while it runs, and the connection closed the
moment the consumer goes away.

A dialect supplies its path, its request body, a frame decoder (SSE or NDJSON) and a translator from
frames to `StreamEvent`s (factory.py puts them together); `HttpProvider` does the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs
import httpx

from openvaala_lsp.providers.base import ModelRequest, ProviderError, StreamEvent
from openvaala_lsp.providers.errors import (
    AUTHENTICATION,
    CONNECTION,
    STREAM_ERROR,
    STREAM_INCOMPLETE,
    DeadlineExceeded,
    http_error,
)
from openvaala_lsp.providers.retry import RetryPolicy
from openvaala_lsp.providers.sse import FrameTooLarge
from openvaala_lsp.wire import compact_json

log = logging.getLogger(__name__)

USER_AGENT = "openvaala-lsp"
_MAX_ERROR_BODY = 64 * 1024
_DRAIN_SECONDS = 2.0  # after the terminal event, how long to wait for the body's end to keep the connection
_JSON = {"content-type": "application/json"}
# per endpoint: the calls streaming at once (a call beyond waits up to `ProviderTimeouts.pool`), and the
# idle connections kept for the next call
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)

F = TypeVar("F")
F_co = TypeVar("F_co", covariant=True)
F_contra = TypeVar("F_contra", contravariant=True)


@attrs.frozen(kw_only=True)
class ProviderTimeouts:
    """Seconds. `connect`, `read` (longest gap between socket reads), `write` and `pool` go to httpx;
    `first_event` bounds request-sent-to-first-event (reasoning models may think silently for
    minutes), `idle` the gap between events once streaming. Keep-alive comments and pings are not
    events, so a server that only pings still hits the idle deadline."""

    connect: float = 10.0
    read: float = 600.0
    write: float = 30.0
    pool: float = 10.0
    first_event: float = 600.0
    idle: float = 300.0

    def httpx_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


class FrameDecoder(Protocol[F_co]):
    def feed(self, chunk: bytes) -> Sequence[F_co]: ...

    def finish(self) -> Sequence[F_co]: ...


class Translator(Protocol[F_contra]):
    """Turns one dialect's frames into neutral events. `finished` turns true at the terminal event;
    error frames raise ProviderError."""

    @property
    def finished(self) -> bool: ...

    def is_keepalive(self, frame: F_contra) -> bool: ...

    def feed(self, frame: F_contra) -> list[StreamEvent]: ...


class EnvApiKey(httpx.Auth):
    """Reads the key from the named environment variable at each request, so it is never kept on
    any object of ours, never logged and can rotate. Its value is scrubbed from error messages."""

    def __init__(self, variable: str, environ: Mapping[str, str], *, header: str, bearer: bool) -> None:
        self.variable = variable
        self._environ = environ
        self._header = header
        self._bearer = bearer

    def __repr__(self) -> str:
        return f"EnvApiKey(variable={self.variable!r})"

    def require(self) -> str:
        key = self._environ.get(self.variable, "")
        if not key.strip():
            raise ProviderError(AUTHENTICATION, f"environment variable {self.variable} with the API key is not set")
        return key.strip()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        key = self.require()
        request.headers[self._header] = f"Bearer {key}" if self._bearer else key
        yield request

    def redact(self, text: str) -> str:
        key = self._environ.get(self.variable, "").strip()
        return text.replace(key, "[redacted]") if len(key) >= 4 else text


@attrs.frozen
class _Opened:
    response: httpx.Response
    first_event_deadline: float  # loop time


class HttpProvider(Generic[F]):
    """A `Provider` of one model API, over one httpx.AsyncClient for the provider's lifetime: a call
    posts `body(request)` to `path` and reads the answer with a new `decoder()` and `translator()`."""

    def __init__(
        self,
        *,
        path: str,
        body: Callable[[ModelRequest], dict[str, Any]],
        decoder: Callable[[], FrameDecoder[F]],
        translator: Callable[[], Translator[F]],
        base_url: str,
        headers: Mapping[str, str],
        auth: EnvApiKey | None,
        timeouts: ProviderTimeouts,
        retry: RetryPolicy,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._path = path
        self._body = body
        self._decoder = decoder
        self._translator = translator
        self._auth = auth
        self._timeouts = timeouts
        self._retry = retry
        self._client = httpx.AsyncClient(
            base_url=base_url,
            headers={"user-agent": USER_AGENT, **headers},
            auth=auth,
            timeout=timeouts.httpx_timeout(),
            limits=LIMITS,
            transport=transport,  # tests' MockTransport; None: httpx's, with a proxy's where the environment says
            # a plain-HTTP origin (a local model) has no TLS on any path (httpcore verifies an HTTPS proxy
            # itself): loading the certificates would cost its first turn ~25 ms
            verify=not base_url.startswith("http://"),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            async with (
                self._open(self._body(request)) as opened,
                contextlib.aclosing(self._pump(opened, self._decoder(), self._translator())) as events,
            ):
                async for event in events:
                    yield event
        except ProviderError as error:
            self._scrub(error)
            raise

    def _scrub(self, error: ProviderError) -> None:
        if self._auth is not None:
            error.message = self._auth.redact(error.message)
            error.args = (error.message,)

    @contextlib.asynccontextmanager
    async def _open(self, body: dict[str, Any]) -> AsyncIterator[_Opened]:
        """Sends the request until a 2xx response arrives, retrying per the RetryPolicy. The
        connection of a failed attempt is closed before the backoff sleep."""
        loop = asyncio.get_running_loop()
        retries = 0
        while True:
            headers: Mapping[str, str] | None = None
            status: int | None = None
            async with contextlib.AsyncExitStack() as stack:
                deadline = loop.time() + self._timeouts.first_event
                try:
                    async with asyncio.timeout_at(deadline):
                        response = await stack.enter_async_context(
                            self._client.stream("POST", self._path, content=compact_json.dumps(body), headers=_JSON)
                        )
                except TimeoutError:
                    error: ProviderError = DeadlineExceeded("firstEvent", self._timeouts.first_event)
                except httpx.TransportError as exc:
                    error = self._transport_error(exc)
                else:
                    if response.is_success:
                        yield _Opened(response, deadline)
                        return
                    status, headers = response.status_code, response.headers
                    error = http_error(status, await _read_error_body(response, deadline))
            self._scrub(error)
            delay = self._retry.delay(retries, kind=error.kind, status=status, headers=headers)
            if delay is None:
                raise error
            retries += 1
            log.info("model call failed (%s: %s); retry %d in %.2f s", error.kind, error.message, retries, delay)
            await self._retry.sleep(delay)

    def _transport_error(self, exc: httpx.TransportError) -> ProviderError:
        timeouts = self._timeouts
        if isinstance(exc, httpx.ConnectTimeout):
            return DeadlineExceeded("connect", timeouts.connect)
        if isinstance(exc, httpx.PoolTimeout):
            return DeadlineExceeded("pool", timeouts.pool)
        if isinstance(exc, httpx.WriteTimeout):
            return DeadlineExceeded("write", timeouts.write)
        if isinstance(exc, httpx.TimeoutException):
            return DeadlineExceeded("read", timeouts.read)
        return ProviderError(CONNECTION, f"could not reach the model provider: {_describe(exc)}", retryable=True)

    async def _pump(
        self, opened: _Opened, decoder: FrameDecoder[F], translator: Translator[F]
    ) -> AsyncGenerator[StreamEvent, None]:
        loop = asyncio.get_running_loop()
        chunks = opened.response.aiter_bytes()
        deadline = _Deadline(loop, opened.first_event_deadline)
        deadline_name = "firstEvent"
        completed = end_of_body = False
        try:
            while not completed and not end_of_body:
                try:
                    chunk = await anext(chunks)
                    frames = decoder.feed(chunk)
                except StopAsyncIteration:
                    end_of_body = True
                    frames = decoder.finish()
                except asyncio.CancelledError:
                    if not deadline.expired:
                        raise
                    deadline.forgive()  # the cancel was the deadline's: a timeout, not a stop
                    limit = self._timeouts.first_event if deadline_name == "firstEvent" else self._timeouts.idle
                    raise DeadlineExceeded(deadline_name, limit) from None
                except httpx.TimeoutException:
                    raise DeadlineExceeded("read", self._timeouts.read) from None
                except httpx.TransportError as exc:
                    raise ProviderError(
                        CONNECTION, f"connection lost mid-stream: {_describe(exc)}", retryable=True
                    ) from None
                except FrameTooLarge as exc:
                    raise ProviderError(STREAM_ERROR, str(exc)) from None
                for frame in frames:
                    if translator.is_keepalive(frame):
                        continue
                    events = translator.feed(frame)
                    deadline.pause()  # the consumer's own pace never counts as idle
                    for event in events:
                        yield event
                    completed = translator.finished
                    if completed:
                        break
                    # Measured from when the consumer asked for more.
                    deadline.move(loop.time() + self._timeouts.idle)
                    deadline_name = "idle"
        finally:
            deadline.close()
        if not completed:
            raise ProviderError(STREAM_INCOMPLETE, "the model stream ended before its terminal event", retryable=True)
        await _drain(chunks, loop.time() + min(_DRAIN_SECONDS, self._timeouts.idle))


class _Deadline:
    """The stream's read deadline, moved after every frame: one timer for the whole stream, re-armed
    only when it fires early, where `asyncio.timeout` around each read costs a timer per delta. When
    it passes, the reading task is cancelled; `expired` tells that cancel from any other."""

    def __init__(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self._loop = loop
        self._task = asyncio.current_task()
        self._when = when
        self._expired = False
        self._handle: asyncio.TimerHandle | None = loop.call_at(when, self._fire)
        self._armed_at = when

    def move(self, when: float) -> None:
        self._when = when
        if when < self._armed_at:  # after a pause the timer was let go
            self._arm()

    def pause(self) -> None:
        self._when = math.inf

    @property
    def expired(self) -> bool:
        return self._expired

    def forgive(self) -> None:
        if self._task is not None:
            self._task.uncancel()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _arm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = self._when
        self._handle = None if math.isinf(self._when) else self._loop.call_at(self._when, self._fire)

    def _fire(self) -> None:
        if self._loop.time() >= self._when:
            self._expired = True
            if self._task is not None:
                self._task.cancel()
        else:
            self._arm()


async def _read_error_body(response: httpx.Response, deadline: float) -> bytes:
    body = bytearray()
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout_at(deadline):
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= _MAX_ERROR_BODY:
                    break
    return bytes(body)


async def _drain(chunks: AsyncIterator[bytes], deadline: float) -> None:
    """Reads what follows the terminal event so the connection can go back to the pool; a server
    that keeps talking past the deadline just gets its connection closed."""
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout_at(deadline):
            async for _ in chunks:
                pass


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
