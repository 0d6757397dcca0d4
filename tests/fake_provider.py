"""A scripted fake model provider: a real HTTP/1.1 server on 127.0.0.1 speaking the four dialects.

Routes: /v1/chat/completions (openai-chat), /v1/responses (openai-responses), /v1/messages (anthropic),
/api/chat (ollama). Each route serves a queue of `ScriptedResponse`s (then its default, if set);
every request is recorded with its headers, JSON body and how its response ended.

    server = FakeProviderServer()            # or: async with FakeProviderServer() as server:
    await server.start()
    server.enqueue("anthropic", AnthropicStream().text("Hel", "lo").finish().response())
    definition.base_url = server.base_url("anthropic")
    ...
    assert server.requests[0].json["stream"] is True
    await server.stop()

From another thread or process-based tests: `with FakeProviderServer.start_in_thread() as server:`.

Script builders render each dialect's real wire format: `ChatStream`, `ResponsesStream`,
`AnthropicStream`, `OllamaStream` (or `stream_script(api)`), all with text / reasoning / tool_call /
parallel_tool_calls / deltas / keepalive / unknown / error / pause / raw / finish, then `.response()`
with the framing (chunked, close), the ending (complete, drop, hang) and an optional `write_size` that
splits every frame into TCP writes of that many bytes (1 splits inside CRLFs and UTF-8 characters).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar, Self

import attrs
import pytest

from openvaala_lsp.runtime.titles import TITLE_INSTRUCTIONS

ROUTES = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
}
_BASE_PATHS = {"openai-chat": "/v1", "openai-responses": "/v1", "anthropic": "", "ollama": ""}
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}
_REASONS |= {408: "Request Timeout", 409: "Conflict", 413: "Payload Too Large", 429: "Too Many Requests"}
_REASONS |= {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 529: "Overloaded"}
_MAX_HEAD = 64 * 1024
_WAIT_BOUND = 10.0  # seconds; a safety bound, never a measurement

Frame = tuple[float, bytes]  # (seconds to wait before writing, bytes written in one TCP write)


@attrs.define(kw_only=True)
class ScriptedResponse:
    """framing: "chunked" (transfer-encoding), "close" (body ends when the connection closes) or
    "length" (content-length). ending: "complete"; "drop" (abort the connection after the frames,
    without the chunked terminator); "hang" (stay silent until the client goes away)."""

    status: int = 200
    headers: dict[str, str] = attrs.Factory(dict)
    frames: list[Frame] = attrs.Factory(list)
    framing: str = "chunked"
    ending: str = "complete"


@attrs.define(kw_only=True, eq=False)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any = None
    connection: int = 0  # which TCP connection carried it (numbered from 1), to see keep-alive reuse
    # "pending" until the response ends: "completed", "dropped" (scripted) or "disconnected" (client left).
    outcome: str = "pending"
    finished: threading.Event = attrs.Factory(threading.Event)
    received_at: float = attrs.Factory(time.monotonic)  # when the request was read (for benchmarks)
    title: bool = False  # the runtime asking for a conversation's title
    finished_at: float | None = None


def is_title_request(body: Any) -> bool:
    """Whether a request is the runtime's title call (its instructions are the title prompt), in any dialect."""
    text = json.dumps(body)[:2000] if body is not None else ""
    return TITLE_INSTRUCTIONS[:60] in text


def _api_of(api_or_path: str) -> str:
    return api_or_path if api_or_path.startswith("/") else ROUTES[api_or_path]


class FakeProviderServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._queues: dict[str, deque[ScriptedResponse]] = {}
        self._defaults: dict[str, ScriptedResponse] = {}
        self._requests: list[RecordedRequest] = []
        self._connection_count = 0
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self.title_text = "A scripted title"

    # Lifecycle.

    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Aborting the sockets lets each handler end by itself; cancelling handler tasks would make
        # Python 3.11's asyncio.streams log them as failed callbacks.
        for writer in self._connections.values():
            writer.transport.abort()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=_WAIT_BOUND)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @classmethod
    def start_in_thread(cls, host: str = "127.0.0.1", port: int = 0) -> FakeProviderServer:
        """A started server running on its own event loop in a daemon thread; stop with `stop_thread()`
        (or use it as a `with` block). Scripting and inspecting it from the calling thread is safe."""
        server = cls(host, port)
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(server.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        server._thread = threading.Thread(target=run, name="fake-provider", daemon=True)
        server._thread_loop = loop
        server._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return server

    def stop_thread(self) -> None:
        loop, thread = self._thread_loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        self._thread = self._thread_loop = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_thread()

    # Scripting and inspection.

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def base_url(self, api: str) -> str:
        """The ModelDefinition.base_url that makes the provider of `api` call this server."""
        return self.url + _BASE_PATHS[api]

    def enqueue(self, api_or_path: str, *responses: ScriptedResponse) -> None:
        with self._lock:
            self._queues.setdefault(_api_of(api_or_path), deque()).extend(responses)

    def set_default(self, api_or_path: str, response: ScriptedResponse | None) -> None:
        """Served (again and again) when the route's queue is empty."""
        with self._lock:
            if response is None:
                self._defaults.pop(_api_of(api_or_path), None)
            else:
                self._defaults[_api_of(api_or_path)] = response

    @property
    def requests(self) -> list[RecordedRequest]:
        """What the runtime asked, but for titles (see `titles`): a test scripts turns, not titles."""
        with self._lock:
            return [request for request in self._requests if not request.title]

    @property
    def titles(self) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self._requests if request.title]

    def title_response(self, path: str) -> ScriptedResponse:
        """What a title request gets: `title_text` (set it to script the title), streamed in the route's
        dialect. Title requests never take a scripted turn response."""
        api = next((name for name, route in ROUTES.items() if route == path), None)
        if api is None:
            return json_response(404, {"error": {"message": f"fake server: no route {path}", "type": "not_found"}})
        response: ScriptedResponse = stream_script(api).text(self.title_text).finish().response()
        return response

    def requests_for(self, api_or_path: str) -> list[RecordedRequest]:
        path = _api_of(api_or_path)
        return [request for request in self.requests if request.path == path]

    async def wait_finished(self, request: RecordedRequest) -> str:
        """The request's outcome once its response ended (bounded so a broken test cannot hang)."""
        await asyncio.to_thread(request.finished.wait, _WAIT_BOUND)
        return request.outcome

    def _next_response(self, path: str) -> ScriptedResponse:
        with self._lock:
            queue = self._queues.get(path)
            if queue:
                return queue.popleft()
            if path in self._defaults:
                return self._defaults[path]
        if path not in ROUTES.values():
            return json_response(404, {"error": {"message": f"fake server: no route {path}", "type": "not_found"}})
        payload = {"error": {"message": f"fake server: nothing scripted for {path}", "type": "server_error"}}
        return json_response(500, payload, headers={"x-should-retry": "false"})

    # HTTP.

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        connection = _Connection(reader, writer)
        with self._lock:
            self._connection_count += 1
            number = self._connection_count
        try:
            while True:
                request = await connection.read_request()
                if request is None:
                    break
                request.connection = number
                request.title = is_title_request(request.json)
                with self._lock:
                    self._requests.append(request)
                response = self.title_response(request.path) if request.title else self._next_response(request.path)
                keep_alive = await self._respond(connection, request, response)
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._connections.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _respond(self, connection: _Connection, request: RecordedRequest, response: ScriptedResponse) -> bool:
        body_length = sum(len(data) for _, data in response.frames)
        head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Status')}"]
        headers = {key.lower(): value for key, value in response.headers.items()}
        if response.framing == "chunked":
            headers["transfer-encoding"] = "chunked"
        elif response.framing == "length":
            headers["content-length"] = str(body_length)
        else:
            headers["connection"] = "close"
        head.extend(f"{key}: {value}" for key, value in headers.items())
        watcher = asyncio.create_task(connection.wait_for_eof())
        sender = asyncio.create_task(self._send(connection, ("\r\n".join(head) + "\r\n\r\n").encode(), response))
        try:
            done, _ = await asyncio.wait({watcher, sender}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watcher, sender):
                task.cancel()
            await asyncio.gather(watcher, sender, return_exceptions=True)
        if sender in done and not sender.cancelled() and sender.exception() is None:
            request.outcome = sender.result()
        else:
            request.outcome = "disconnected"
        request.finished_at = time.monotonic()
        request.finished.set()
        return request.outcome == "completed" and response.framing != "close"

    async def _send(self, connection: _Connection, head: bytes, response: ScriptedResponse) -> str:
        writer = connection.writer
        writer.write(head)
        await writer.drain()
        for delay, data in response.frames:
            if delay > 0:
                await asyncio.sleep(delay)
            if response.framing == "chunked":
                if not data:
                    continue  # an empty chunk would end the body
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            else:
                writer.write(data)
            await writer.drain()
        if response.ending == "drop":
            writer.transport.abort()
            return "dropped"
        if response.ending == "hang":
            await asyncio.Event().wait()  # until the watcher sees the client leave
        if response.framing == "chunked":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return "completed"


class _Connection:
    """Buffered request reading; while a response is sent, `wait_for_eof` keeps reading so that a
    client hanging up is noticed at once, and anything it sends early stays in the buffer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.buffer = bytearray()

    async def _fill(self) -> bool:
        try:
            data = await self.reader.read(65536)
        except ConnectionError:
            return False
        self.buffer += data
        return bool(data)

    async def wait_for_eof(self) -> None:
        while await self._fill():
            pass

    async def _take_until(self, marker: bytes) -> bytes | None:
        while marker not in self.buffer:
            if len(self.buffer) > _MAX_HEAD or not await self._fill():
                return None
        end = self.buffer.index(marker) + len(marker)
        data = bytes(self.buffer[:end])
        del self.buffer[:end]
        return data

    async def _take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            if not await self._fill():
                raise asyncio.IncompleteReadError(bytes(self.buffer), count)
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    async def read_request(self) -> RecordedRequest | None:
        head = await self._take_until(b"\r\n\r\n")
        if head is None:
            return None
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._chunked_body()
        else:
            body = await self._take(int(headers.get("content-length", "0")))
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return RecordedRequest(method=method, path=target.split("?", 1)[0], headers=headers, body=body, json=parsed)

    async def _chunked_body(self) -> bytes:
        body = bytearray()
        while True:
            size_line = await self._take_until(b"\r\n")
            if size_line is None:
                raise asyncio.IncompleteReadError(bytes(body), None)
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                await self._take_until(b"\r\n")
                return bytes(body)
            body += await self._take(size)
            await self._take(2)


# Responses that are not streams.


def json_response(status: int, payload: Any, *, headers: dict[str, str] | None = None) -> ScriptedResponse:
    return ScriptedResponse(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        frames=[(0.0, json.dumps(payload).encode())],
        framing="length",
    )


def openai_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> ScriptedResponse:
    return json_response(
        status, {"error": {"message": message, "type": type, "param": None, "code": code}}, headers=headers
    )


def anthropic_error(status: int, type: str, message: str, *, headers: dict[str, str] | None = None) -> ScriptedResponse:
    payload = {"type": "error", "error": {"type": type, "message": message}, "request_id": "req_fake"}
    return json_response(status, payload, headers=headers)


def ollama_error(status: int, message: str, *, headers: dict[str, str] | None = None) -> ScriptedResponse:
    return json_response(status, {"error": message}, headers=headers)


def rate_limited(api: str, *, retry_after: str | None = None, retry_after_ms: str | None = None) -> ScriptedResponse:
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    if api == "anthropic":
        return anthropic_error(
            429, "rate_limit_error", "Number of requests has exceeded your rate limit", headers=headers
        )
    if api == "ollama":
        return ollama_error(429, "too many requests", headers=headers)
    return openai_error(429, "Rate limit reached", type="requests", code="rate_limit_exceeded", headers=headers)


def insufficient_quota(api: str) -> ScriptedResponse:
    """OpenAI's 429 that must not be retried; Anthropic says it with a 400."""
    if api == "anthropic":
        return anthropic_error(400, "invalid_request_error", "Your credit balance is too low to access the API.")
    return openai_error(429, "You exceeded your current quota.", type="insufficient_quota", code="insufficient_quota")


def overloaded(api: str) -> ScriptedResponse:
    if api == "anthropic":
        return anthropic_error(529, "overloaded_error", "Overloaded")
    if api == "ollama":
        return ollama_error(503, "server busy, please try again")
    return openai_error(503, "The server is overloaded", type="server_error", code="server_is_overloaded")


def error_response(api: str, status: int, message: str, *, code: str | None = None) -> ScriptedResponse:
    """A plain error in the dialect's shape (e.g. 400, 401, 404, 500)."""
    if api == "anthropic":
        types = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
        types |= {404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error"}
        return anthropic_error(status, types.get(status, "api_error"), message)
    if api == "ollama":
        return ollama_error(status, message)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return openai_error(status, message, type=kind, code=code)


# Stream scripts.


def _dump(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False)  # real UTF-8 on the wire, as the vendors send


class StreamScript(abc.ABC):
    """Frames of one streamed response. Methods append and return self, so scripts chain."""

    api: ClassVar[str]
    content_type: ClassVar[str] = "text/event-stream; charset=utf-8"

    def __init__(self, *, newline: str = "\n") -> None:
        self.newline = newline
        self.frames: list[Frame] = []
        self._delay = 0.0
        self._calls = 0

    def _emit(self, text: str) -> None:
        self.frames.append((self._delay, text.encode()))
        self._delay = 0.0

    def _sse(self, event: str | None, payload: Any) -> None:
        lines = [f"event: {event}"] if event else []
        lines.append(f"data: {payload if isinstance(payload, str) else _dump(payload)}")
        self._emit(self.newline.join(lines) + self.newline * 2)

    def pause(self, seconds: float) -> Self:
        """Silence before the next frame (a stall, when long)."""
        self._delay += seconds
        return self

    def raw(self, data: bytes) -> Self:
        self.frames.append((self._delay, data))
        self._delay = 0.0
        return self

    def keepalive(self) -> Self:
        self._emit(": keep-alive" + self.newline * 2)
        return self

    def deltas(self, count: int, piece: str = "x") -> Self:
        """A long turn cheaply: `count` text deltas of `piece`."""
        return self.text(*([piece] * count))

    @abc.abstractmethod
    def text(self, *pieces: str) -> Self: ...

    def response(
        self,
        *,
        framing: str = "chunked",
        ending: str = "complete",
        write_size: int | None = None,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> ScriptedResponse:
        frames = list(self.frames)
        if self._delay:
            frames.append((self._delay, b""))
        if write_size:
            frames = [
                (delay if start == 0 else 0.0, data[start : start + write_size])
                for delay, data in frames
                for start in range(0, max(len(data), 1), write_size)
            ]
        return ScriptedResponse(
            status=status,
            headers={"content-type": self.content_type, **(headers or {})},
            frames=frames,
            framing=framing,
            ending=ending,
        )


class ChatStream(StreamScript):
    """OpenAI Chat Completions chunks (`data: {...}` and `data: [DONE]`)."""

    api = "openai-chat"

    def __init__(self, *, model: str = "fake-model", newline: str = "\n", role_chunk: bool = True) -> None:
        super().__init__(newline=newline)
        self.model = model
        if role_chunk:
            self._chunk({"role": "assistant", "content": ""})

    def _chunk(
        self, delta: dict[str, Any], *, finish_reason: str | None = None, usage: dict[str, Any] | None = None
    ) -> None:
        self._sse(
            None,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
                "usage": usage,
            },
        )

    def text(self, *pieces: str) -> Self:
        for piece in pieces:
            self._chunk({"content": piece})
        return self

    def reasoning(self, *pieces: str, field: str = "reasoning_content") -> Self:
        for piece in pieces:
            self._chunk({field: piece})
        return self

    def tool_call(
        self, call_id: str, name: str, fragments: list[str], *, index: int | None = None, repeat_header: bool = False
    ) -> Self:
        """`repeat_header` is llama-cpp-python's shape: id, type and name on every fragment, plus a
        legacy `function_call` duplicate."""
        index = self._next_index(index)
        if repeat_header:
            for fragment in [*fragments, ""]:
                function = {"name": name, "arguments": fragment}
                call = {"index": index, "id": call_id, "type": "function", "function": function}
                self._chunk({"role": "assistant", "content": None, "tool_calls": [call], "function_call": function})
            return self
        self._tool_header(index, call_id, name)
        for fragment in fragments:
            self._tool_fragment(index, fragment)
        return self

    def whole_tool_call(self, call_id: str, name: str, arguments: str, *, index: int | None = None) -> Self:
        """Ollama's /v1 shape: id, name and all arguments in one chunk."""
        index = self._next_index(index)
        function = {"name": name, "arguments": arguments}
        self._chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]})
        return self

    def parallel_tool_calls(self, calls: list[tuple[str, str, list[str]]]) -> Self:
        """Calls opened one after another with their fragments interleaved round-robin."""
        indexes = [self._next_index(None) for _ in calls]
        rounds = max((len(fragments) for _, _, fragments in calls), default=0)
        for round_number in range(max(rounds, 1)):
            for index, (call_id, name, fragments) in zip(indexes, calls, strict=True):
                if round_number == 0:
                    self._tool_header(index, call_id, name)
                if round_number < len(fragments):
                    self._tool_fragment(index, fragments[round_number])
        return self

    def _next_index(self, index: int | None) -> int:
        if index is None:
            index = self._calls
        self._calls = max(self._calls, index + 1)
        return index

    def _tool_header(self, index: int, call_id: str, name: str) -> None:
        call = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        self._chunk({"tool_calls": [call]})

    def _tool_fragment(self, index: int, fragment: str) -> None:
        self._chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})

    def finish(
        self,
        reason: str | None = None,
        *,
        usage: dict[str, Any] | None = None,
        usage_in_last_chunk: bool = False,
        done: bool = True,
    ) -> Self:
        reason = reason or ("tool_calls" if self._calls else "stop")
        if usage_in_last_chunk:
            self._chunk({}, finish_reason=reason, usage=usage)
        else:
            self._chunk({}, finish_reason=reason)
            if usage is not None:
                self._sse(
                    None,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 1_700_000_000,
                        "model": self.model,
                        "choices": [],
                        "usage": usage,
                    },
                )
        if done:
            self._sse(None, "[DONE]")
        return self

    def error(
        self, message: str = "The server had an error", *, type: str = "server_error", code: str | None = None
    ) -> Self:
        self._sse(None, {"error": {"message": message, "type": type, "param": None, "code": code}})
        return self

    def unknown(self) -> Self:
        """Unknown fields, a named event this dialect does not use, and unknown SSE fields."""
        self._sse(
            None,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.model,
                "obfuscation": "q9X",
                "service_tier": "default",
                "choices": [{"index": 0, "delta": {"audio": {"id": "a1"}}, "logprobs": None, "finish_reason": None}],
                "usage": None,
            },
        )
        nl = self.newline
        self._emit(f"event: future_event{nl}id: 7{nl}retry: 1000{nl}flavour: mint{nl}data: {{}}{nl}{nl}")
        return self


class ResponsesStream(StreamScript):
    """OpenAI Responses events (`event: <type>` + `data: {type, sequence_number, ...}`)."""

    api = "openai-responses"

    def __init__(self, *, model: str = "fake-model", newline: str = "\n") -> None:
        super().__init__(newline=newline)
        self.model = model
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._message: dict[str, Any] | None = None
        self._event("response.created", response=self._response("in_progress"))
        self._event("response.in_progress", response=self._response("in_progress"))

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        output = self._output if status != "in_progress" else []
        return {
            "id": "resp_fake",
            "object": "response",
            "model": self.model,
            "status": status,
            "output": output,
            **fields,
        }

    def _event(self, type: str, **fields: Any) -> None:
        self._sse(type, {"type": type, "sequence_number": self._sequence, **fields})
        self._sequence += 1

    def text(self, *pieces: str) -> Self:
        if self._message is None:
            item_id = f"msg_{len(self._output)}"
            self._message = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            self._message["output_index"] = len(self._output)
            self._output.append({})
            self._event(
                "response.output_item.added", output_index=self._message["output_index"], item=self._item_view()
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            self._event(
                "response.content_part.added",
                item_id=item_id,
                output_index=self._message["output_index"],
                content_index=0,
                part=part,
            )
            self._message["text"] = ""
        for piece in pieces:
            self._message["text"] += piece
            self._event(
                "response.output_text.delta",
                item_id=self._message["id"],
                output_index=self._message["output_index"],
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        return self

    def _item_view(self) -> dict[str, Any]:
        assert self._message is not None
        return {key: value for key, value in self._message.items() if key not in ("output_index", "text")}

    def _close_message(self) -> None:
        message = self._message
        if message is None:
            return
        self._message = None
        item_id, index, text = message["id"], message["output_index"], message["text"]
        part = {"type": "output_text", "text": text, "annotations": []}
        self._event("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text)
        self._event("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [part]}
        self._output[index] = item
        self._event("response.output_item.done", output_index=index, item=item)

    def reasoning(self, *pieces: str, encrypted_content: str = "enc-fake") -> Self:
        """A reasoning item whose pieces stream as summary part 0."""
        self._close_message()
        index = len(self._output)
        item_id = f"rs_{index}"
        self._output.append({})
        self._event(
            "response.output_item.added", output_index=index, item={"type": "reasoning", "id": item_id, "summary": []}
        )
        for piece in pieces:
            self._event(
                "response.reasoning_summary_text.delta",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                delta=piece,
            )
        summary = [{"type": "summary_text", "text": "".join(pieces)}] if pieces else []
        item = {"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": encrypted_content}
        self._output[index] = item
        self._event("response.output_item.done", output_index=index, item=item)
        return self

    def tool_call(self, call_id: str, name: str, fragments: list[str]) -> Self:
        return self.parallel_tool_calls([(call_id, name, fragments)])

    def parallel_tool_calls(self, calls: list[tuple[str, str, list[str]]]) -> Self:
        """All items opened, their argument deltas interleaved round-robin, then each closed."""
        self._close_message()
        opened = []
        for call_id, name, fragments in calls:
            index = len(self._output)
            item = {
                "type": "function_call",
                "id": f"fc_{index}",
                "call_id": call_id,
                "name": name,
                "arguments": "",
                "status": "in_progress",
            }
            self._output.append({})
            self._event("response.output_item.added", output_index=index, item=item)
            opened.append((index, item, fragments))
        self._calls += len(calls)
        for round_number in range(max((len(fragments) for _, _, fragments in calls), default=0)):
            for index, item, fragments in opened:
                if round_number < len(fragments):
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=index,
                        delta=fragments[round_number],
                    )
        for index, item, fragments in opened:
            arguments = "".join(fragments)
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=arguments,
            )
            done = {**item, "arguments": arguments, "status": "completed"}
            self._output[index] = done
            self._event("response.output_item.done", output_index=index, item=done)
        return self

    def finish(
        self, status: str = "completed", *, usage: dict[str, Any] | None = None, reason: str = "max_output_tokens"
    ) -> Self:
        """`status` "completed" or "incomplete" (with `reason`)."""
        self._close_message()
        if status == "incomplete":
            response = self._response("incomplete", usage=usage, incomplete_details={"reason": reason})
            self._event("response.incomplete", response=response)
        else:
            self._event("response.completed", response=self._response("completed", usage=usage))
        return self

    def failed(self, code: str = "server_error", message: str = "The model failed") -> Self:
        self._close_message()
        self._event("response.failed", response=self._response("failed", error={"code": code, "message": message}))
        return self

    def error(self, message: str = "The server had an error", *, code: str = "server_error") -> Self:
        self._event("error", code=code, message=message, param=None)
        return self

    def unknown(self) -> Self:
        self._event("response.future_tool.in_progress", item_id="ft_1", output_index=99, flavour="mint")
        return self


class AnthropicStream(StreamScript):
    """Anthropic Messages events (`event: <type>` + `data: {"type": <type>, ...}`)."""

    api = "anthropic"

    def __init__(
        self,
        *,
        model: str = "fake-model",
        newline: str = "\n",
        usage: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(newline=newline)
        self._index = 0
        start_usage = usage if usage is not None else {"input_tokens": 10, "output_tokens": 1}
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        self._event("message_start", message=message)

    def _event(self, type: str, **fields: Any) -> None:
        self._sse(type, {"type": type, **fields})

    def _open(self, block: dict[str, Any]) -> int:
        index = self._index
        self._index += 1
        self._event("content_block_start", index=index, content_block=block)
        return index

    def text(self, *pieces: str) -> Self:
        index = self._open({"type": "text", "text": ""})
        for piece in pieces:
            self._event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        self._event("content_block_stop", index=index)
        return self

    def reasoning(self, *pieces: str, signature: str = "sig-fake") -> Self:
        """A thinking block and its signature."""
        index = self._open({"type": "thinking", "thinking": "", "signature": ""})
        for piece in pieces:
            self._event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        self._event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": signature})
        self._event("content_block_stop", index=index)
        return self

    def redacted_thinking(self, data: str = "opaque") -> Self:
        index = self._open({"type": "redacted_thinking", "data": data})
        self._event("content_block_stop", index=index)
        return self

    def tool_call(self, call_id: str, name: str, fragments: list[str]) -> Self:
        return self.parallel_tool_calls([(call_id, name, fragments)])

    def parallel_tool_calls(self, calls: list[tuple[str, str, list[str]]]) -> Self:
        """Blocks opened together and their deltas interleaved (the API itself sends them one by one;
        interleaving is the harder case for a client). Each starts with the usual empty fragment."""
        opened = [
            (self._open({"type": "tool_use", "id": call_id, "name": name, "input": {}}), ["", *fragments])
            for call_id, name, fragments in calls
        ]
        self._calls += len(calls)
        for round_number in range(max(len(fragments) for _, fragments in opened) if opened else 0):
            for index, fragments in opened:
                if round_number < len(fragments):
                    delta = {"type": "input_json_delta", "partial_json": fragments[round_number]}
                    self._event("content_block_delta", index=index, delta=delta)
        for index, _ in opened:
            self._event("content_block_stop", index=index)
        return self

    def ping(self) -> Self:
        self._event("ping")
        return self

    def finish(self, reason: str | None = None, *, usage: dict[str, Any] | None = None) -> Self:
        reason = reason or ("tool_use" if self._calls else "end_turn")
        self._event(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None},
            usage=usage if usage is not None else {"output_tokens": 5},
        )
        self._event("message_stop")
        return self

    def error(self, message: str = "Overloaded", *, type: str = "overloaded_error") -> Self:
        self._event("error", error={"type": type, "message": message})
        return self

    def unknown(self) -> Self:
        """A future event type and a block type the client does not know, with deltas."""
        self._event("future_event", flavour="mint")
        index = self._open({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})
        self._event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": "{}"})
        self._event("content_block_stop", index=index)
        return self


class OllamaStream(StreamScript):
    """Ollama native NDJSON lines, ending with a `done: true` line."""

    api = "ollama"
    content_type = "application/x-ndjson"

    def __init__(self, *, model: str = "fake-model", newline: str = "\n") -> None:
        super().__init__(newline=newline)
        self.model = model

    def _line(self, payload: dict[str, Any]) -> None:
        self._emit(_dump(payload) + self.newline)

    def _message(self, message: dict[str, Any], **fields: Any) -> None:
        line = {
            "model": self.model,
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
            **fields,
        }
        self._line(line)

    def text(self, *pieces: str) -> Self:
        for piece in pieces:
            self._message({"content": piece})
        return self

    def reasoning(self, *pieces: str) -> Self:
        for piece in pieces:
            self._message({"thinking": piece})
        return self

    def tool_call(self, call_id: str, name: str, fragments: list[str]) -> Self:
        return self.parallel_tool_calls([(call_id, name, fragments)])

    def parallel_tool_calls(self, calls: list[tuple[str, str, list[str]]]) -> Self:
        """Whole calls in one line, arguments as objects (fragments are joined and parsed)."""
        tool_calls = []
        for call_id, name, fragments in calls:
            function = {"index": self._calls, "name": name, "arguments": json.loads("".join(fragments) or "{}")}
            tool_calls.append({"id": call_id, "function": function} if call_id else {"function": function})
            self._calls += 1
        self._message({"tool_calls": tool_calls})
        return self

    def finish(self, reason: str = "stop", *, usage: dict[str, Any] | None = None) -> Self:
        line = {
            "model": self.model,
            "created_at": "2026-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
            "total_duration": 1_000_000,
            "load_duration": 1_000,
        }
        self._line({**line, **(usage or {})})
        return self

    def error(self, message: str = "an error was encountered while running the model") -> Self:
        self._line({"error": message})
        return self

    def keepalive(self) -> Self:
        self._emit(self.newline)  # NDJSON has no comments; a blank line is the nearest thing
        return self

    def unknown(self) -> Self:
        self._message({"images": None, "flavour": "mint"}, logprobs=None)
        return self


SCRIPTS: dict[str, type[StreamScript]] = {
    "openai-chat": ChatStream,
    "openai-responses": ResponsesStream,
    "anthropic": AnthropicStream,
    "ollama": OllamaStream,
}


def stream_script(api: str, **kwargs: Any) -> Any:
    """The script builder of `api` (typed Any: each builder has its dialect's extras)."""
    return SCRIPTS[api](**kwargs)


def text_response(api: str, *pieces: str, usage: dict[str, Any] | None = None) -> ScriptedResponse:
    response: ScriptedResponse = stream_script(api).text(*pieces).finish(usage=usage).response()
    return response


def deltas_response(api: str, count: int, piece: str = "x") -> ScriptedResponse:
    response: ScriptedResponse = stream_script(api).deltas(count, piece).finish().response()
    return response


def tool_call_response(api: str, calls: list[tuple[str, str, list[str]]]) -> ScriptedResponse:
    response: ScriptedResponse = stream_script(api).parallel_tool_calls(calls).finish().response()
    return response


@pytest.fixture
async def fake_provider_server() -> AsyncIterator[FakeProviderServer]:
    """Import into a test module (or conftest) to use: a started server on the test's loop."""
    async with FakeProviderServer() as server:
        yield server


@contextlib.contextmanager
def threaded_fake_provider_server() -> Iterator[FakeProviderServer]:
    server = FakeProviderServer.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()
