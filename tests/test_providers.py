"""The four provider dialects end to end over loopback HTTP against the scripted fake server."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fake_provider import (
    ROUTES,
    AnthropicStream,
    ChatStream,
    FakeProviderServer,
    OllamaStream,
    ResponsesStream,
    error_response,
    insufficient_quota,
    openai_error,
    overloaded,
    rate_limited,
    stream_script,
    text_response,
)

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import Content, ModelRef, TokenUsage, ToolCall
from openvaala_lsp.providers.base import (
    Completed,
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    ReasoningDelta,
    ReasoningDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
)
from openvaala_lsp.providers.errors import DeadlineExceeded
from openvaala_lsp.providers.factory import make_provider
from openvaala_lsp.providers.http import ProviderTimeouts
from openvaala_lsp.providers.retry import RetryPolicy
from openvaala_lsp.wire.compact_json import dumps as json_body

APIS = list(ROUTES)
SSE_APIS = ["openai-chat", "openai-responses", "anthropic"]
KEY_ENV = "FAKE_PROVIDER_KEY"
KEY = "sk-test-5ecret-0123456789"
REQUEST = ModelRequest(model="m", messages=[Message(role="user", content=[Content(type="text", text="hi")])])


class RecordingSleep:
    """Stands in for asyncio.sleep in the retry policy: records the delays, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
async def server() -> AsyncIterator[FakeProviderServer]:
    async with FakeProviderServer() as started:
        yield started


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


MakeProvider = Callable[..., Provider]


@pytest.fixture
async def make(server: FakeProviderServer, sleep: RecordingSleep) -> AsyncIterator[MakeProvider]:
    made: list[Provider] = []

    def factory(
        api: str,
        *,
        timeouts: ProviderTimeouts | None = None,
        environ: dict[str, str] | None = None,
        base_url: str | None = None,
        **retry: Any,
    ) -> Provider:
        definition = ModelDefinition(
            ref=ModelRef(provider="fake", name="m"),
            api=api,
            base_url=base_url or server.base_url(api),
            api_key_env=KEY_ENV,
        )
        policy = RetryPolicy(sleep=sleep, jitter=lambda: 1.0, **retry)
        provider = make_provider(
            definition, {KEY_ENV: KEY} if environ is None else environ, timeouts or ProviderTimeouts(), retry=policy
        )
        made.append(provider)
        return provider

    yield factory
    for provider in made:
        await provider.aclose()


async def collect(provider: Provider, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def collect_until_error(provider: Provider) -> tuple[list[StreamEvent], ProviderError]:
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(REQUEST):
            events.append(event)
    return events, caught.value


def text_of(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def reasoning_of(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, ReasoningDelta))


def done_calls(events: list[StreamEvent]) -> list[ToolCall]:
    return [event.call for event in events if isinstance(event, ToolCallDone)]


def completed(events: list[StreamEvent]) -> Completed:
    assert isinstance(events[-1], Completed)
    assert sum(isinstance(event, Completed) for event in events) == 1
    return events[-1]


# Streaming text.


@pytest.mark.parametrize("api", APIS)
async def test_streams_text(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, text_response(api, "Hé", "llo ", "wörld 🌍"))
    events = await collect(make(api))
    assert text_of(events) == "Héllo wörld 🌍"  # a read's deltas come as one: test_delta_merging.py
    assert completed(events).finish_reason == "stop"
    body = server.requests[0].json
    assert body["stream"] is True and body["model"] == "m"


@pytest.mark.parametrize(
    ("api", "newline", "write_size"),
    [
        (api, newline, write_size)
        for api in APIS
        for newline, write_size in [("\r\n", 1), ("\r", 3), ("\n", 1)]
        if not (api == "ollama" and newline == "\r")
    ],
)
async def test_line_endings_and_tcp_splits(
    api: str, newline: str, write_size: int, server: FakeProviderServer, make: MakeProvider
) -> None:
    """CRLF/CR line ends, and every frame split into tiny TCP writes: inside `data:` lines, between
    CR and LF, inside multi-byte UTF-8 characters."""
    script = stream_script(api, newline=newline).text("Grüße, ", "世界 😀").tool_call("c1", "f", ['{"k": "ü"}'])
    server.enqueue(api, script.finish().response(write_size=write_size))
    events = await collect(make(api))
    assert text_of(events) == "Grüße, 世界 😀"
    assert done_calls(events) == [ToolCall(call_id="c1", name="f", arguments='{"k": "ü"}')]


@pytest.mark.parametrize("api", APIS)
async def test_two_thousand_deltas(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, stream_script(api).deltas(2000, "tok ").finish().response())
    events = await collect(make(api))
    assert text_of(events) == "tok " * 2000


@pytest.mark.parametrize("api", APIS)
async def test_unknown_events_and_keepalives_are_ignored(
    api: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    script = stream_script(api).keepalive().unknown().text("a").keepalive().unknown()
    if api == "anthropic":
        script.ping()
    server.enqueue(api, script.text("b").finish().response())
    events = await collect(make(api))
    assert text_of(events) == "ab"
    assert completed(events).finish_reason == "stop"


@pytest.mark.parametrize("api", APIS)
async def test_connection_is_reused_after_a_complete_stream(
    api: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    server.enqueue(api, text_response(api, "one"), text_response(api, "two"))
    provider = make(api)
    assert text_of(await collect(provider)) == "one"
    assert text_of(await collect(provider)) == "two"
    first, second = server.requests
    assert first.connection == second.connection


# Tool calls.

AWKWARD_FRAGMENTS = [
    "",
    '{"path": "src/caf\\',  # ends inside an escape
    'u00e9.py", "text": "line1\\',
    'nline2 \\"quoted\\" ü€',
    '😀", "n": 1',
    "}",
]


@pytest.mark.parametrize("api", SSE_APIS)
async def test_fragmented_tool_arguments_reassemble(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    script = stream_script(api).text("Reading.").tool_call("call_1", "read_file", AWKWARD_FRAGMENTS).finish()
    server.enqueue(api, script.response(write_size=5))
    events = await collect(make(api))
    arguments = "".join(AWKWARD_FRAGMENTS)
    assert [event for event in events if isinstance(event, ToolCallStarted)] == [
        ToolCallStarted(index=0, call_id="call_1", name="read_file")
    ]
    assert "".join(event.arguments for event in events if isinstance(event, ToolCallDelta)) == arguments
    assert done_calls(events) == [ToolCall(call_id="call_1", name="read_file", arguments=arguments)]
    assert json.loads(arguments) == {"path": "src/café.py", "text": 'line1\nline2 "quoted" ü€😀', "n": 1}
    assert completed(events).finish_reason == "tool_calls"


@pytest.mark.parametrize("api", APIS)
async def test_parallel_tool_calls(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    calls = [
        ("call_a", "read_file", ['{"path"', ': "a.py"', "}"]),
        ("call_b", "grep", ['{"pattern": ', '"TODO", "glob": "*.py"', "}"]),
    ]
    server.enqueue(api, stream_script(api).parallel_tool_calls(calls).finish().response())
    events = await collect(make(api))
    assert done_calls(events) == [
        ToolCall(call_id="call_a", name="read_file", arguments='{"path": "a.py"}'),
        ToolCall(call_id="call_b", name="grep", arguments='{"pattern": "TODO", "glob": "*.py"}'),
    ]
    started = [event for event in events if isinstance(event, ToolCallStarted)]
    assert [(event.index, event.name) for event in started] == [(0, "read_file"), (1, "grep")]
    for index in (0, 1):  # deltas of each call add up to its arguments, whatever the interleaving
        joined = "".join(
            event.arguments for event in events if isinstance(event, ToolCallDelta) and event.index == index
        )
        assert joined == done_calls(events)[index].arguments
    assert completed(events).finish_reason == "tool_calls"


async def test_chat_llama_cpp_repeats_id_and_name_on_every_fragment(
    server: FakeProviderServer, make: MakeProvider
) -> None:
    script = ChatStream().tool_call(
        "call__0_read_file", "read_file", ['{ "path": ', '"README.md" }'], repeat_header=True
    )
    server.enqueue("openai-chat", script.finish("tool_calls").response())
    events = await collect(make("openai-chat"))
    assert done_calls(events) == [
        ToolCall(call_id="call__0_read_file", name="read_file", arguments='{ "path": "README.md" }')
    ]
    assert sum(isinstance(event, ToolCallStarted) for event in events) == 1


async def test_chat_whole_calls_in_one_chunk_and_usage_on_last_chunk(
    server: FakeProviderServer, make: MakeProvider
) -> None:
    """Ollama's /v1 shape: each call complete in one chunk; some servers put usage on the finish chunk."""
    script = ChatStream().whole_tool_call("call_x", "ls", '{"dir": "."}').whole_tool_call("call_y", "ls", "{}")
    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    server.enqueue("openai-chat", script.finish("stop", usage=usage, usage_in_last_chunk=True).response())
    events = await collect(make("openai-chat"))
    assert done_calls(events) == [
        ToolCall(call_id="call_x", name="ls", arguments='{"dir": "."}'),
        ToolCall(call_id="call_y", name="ls", arguments="{}"),
    ]
    assert completed(events) == Completed(
        finish_reason="tool_calls", usage=TokenUsage(input_tokens=9, output_tokens=4, total_tokens=13)
    )


async def test_ollama_tool_call_without_id_gets_one(server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue("ollama", OllamaStream().tool_call("", "ls", ['{"dir": "src"}']).finish().response())
    (call,) = done_calls(await collect(make("ollama")))
    assert call.name == "ls" and call.arguments == '{"dir": "src"}' and call.call_id.startswith("call_")


# Usage.

USAGE_CASES: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 120, "audio_tokens": 0},
    },
    "openai-responses": {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1000},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 120},
        "total_tokens": 1500,
    },
    "ollama": {"prompt_eval_count": 1200, "prompt_eval_cached_count": 1000, "eval_count": 300},
}


@pytest.mark.parametrize("api", list(USAGE_CASES))
async def test_usage_is_normalised(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, text_response(api, "x", usage=USAGE_CASES[api]))
    usage = completed(await collect(make(api))).usage
    reasoning = 0 if api == "ollama" else 120  # Ollama folds reasoning into eval_count
    assert usage == TokenUsage(
        input_tokens=1200,
        cached_input_tokens=1000,
        output_tokens=300,
        reasoning_tokens=reasoning,
        total_tokens=1500,
    )


async def test_anthropic_usage_adds_cache_reads_and_writes_to_input(
    server: FakeProviderServer, make: MakeProvider
) -> None:
    start = {
        "input_tokens": 20,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 180,
        "output_tokens": 1,
    }
    final = {"output_tokens": 300, "output_tokens_details": {"thinking_tokens": 120}}  # cumulative, replaces the 1
    server.enqueue("anthropic", AnthropicStream(usage=start).text("x").finish(usage=final).response())
    assert completed(await collect(make("anthropic"))).usage == TokenUsage(
        input_tokens=1200,
        cached_input_tokens=1000,
        cache_write_tokens=180,
        output_tokens=300,
        reasoning_tokens=120,
        total_tokens=1500,
    )


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "ollama"])
async def test_usage_absent_is_none(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    """llama.cpp streams and cut-down servers report nothing; None means "estimate it"."""
    server.enqueue(api, text_response(api, "x"))
    assert completed(await collect(make(api))).usage is None


# Reasoning.


async def test_chat_reasoning_fields(server: FakeProviderServer, make: MakeProvider) -> None:
    script = ChatStream().reasoning("think ", field="reasoning_content").reasoning("more", field="reasoning")
    server.enqueue("openai-chat", script.text("answer").finish().response())
    events = await collect(make("openai-chat"))
    assert reasoning_of(events) == "think more" and text_of(events) == "answer"


async def test_ollama_thinking(server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue("ollama", OllamaStream().reasoning("hmm ", "ok").text("done").finish().response())
    events = await collect(make("ollama"))
    assert reasoning_of(events) == "hmm ok" and text_of(events) == "done"


async def test_responses_reasoning_item_round_trips(server: FakeProviderServer, make: MakeProvider) -> None:
    script = (
        ResponsesStream()
        .reasoning("Plan: ", "read it.", encrypted_content="gAAA-enc")
        .tool_call("call_1", "read_file", ['{"path": "a"}'])
    )
    server.enqueue("openai-responses", script.finish().response(), text_response("openai-responses", "ok"))
    provider = make("openai-responses")
    events = await collect(provider)
    assert reasoning_of(events) == "Plan: read it."
    (done,) = [event for event in events if isinstance(event, ReasoningDone)]
    assert done.data["encrypted_content"] == "gAAA-enc" and done.data["type"] == "reasoning"

    (call,) = done_calls(events)
    follow_up = ModelRequest(
        model="m",
        messages=[
            *REQUEST.messages,
            Message(role="assistant", tool_calls=[call], reasoning=[done.data]),
            Message(role="tool", tool_call_id=call.call_id, name=call.name, content=[Content(type="text", text="A")]),
        ],
    )
    await collect(provider, follow_up)
    body = server.requests[1].json
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["input"][1:] == [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan: read it."}],
            "encrypted_content": "gAAA-enc",
        },
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "a"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "A"},
    ]


async def test_anthropic_thinking_blocks_round_trip_unchanged(server: FakeProviderServer, make: MakeProvider) -> None:
    script = AnthropicStream().reasoning("Let me ", "look.", signature="EqQBsig==").redacted_thinking("opaque-blob")
    script.tool_call("toolu_1", "read_file", ['{"path": "a"}'])
    server.enqueue("anthropic", script.finish().response(), text_response("anthropic", "ok"))
    provider = make("anthropic")
    events = await collect(provider)
    assert reasoning_of(events) == "Let me look."
    blocks = [event.data for event in events if isinstance(event, ReasoningDone)]
    assert blocks == [
        {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBsig=="},
        {"type": "redacted_thinking", "data": "opaque-blob"},
    ]
    (call,) = done_calls(events)
    follow_up = ModelRequest(
        model="m",
        messages=[
            *REQUEST.messages,
            Message(role="assistant", tool_calls=[call], reasoning=blocks),
            Message(role="tool", tool_call_id="toolu_1", name="read_file", content=[Content(type="text", text="A")]),
        ],
    )
    await collect(provider, follow_up)
    assistant = server.requests[1].json["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [*blocks, {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}],
    }


async def test_responses_incomplete_is_a_length_stop(server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue("openai-responses", ResponsesStream().text("trunc").finish("incomplete").response())
    assert completed(await collect(make("openai-responses"))).finish_reason == "length"


# Retries before the stream starts.


@pytest.mark.parametrize("api", APIS)
async def test_rate_limit_is_retried_after_retry_after(
    api: str, server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep
) -> None:
    server.enqueue(api, rate_limited(api, retry_after="2"), text_response(api, "ok"))
    assert text_of(await collect(make(api))) == "ok"
    assert len(server.requests) == 2
    assert sleep.delays == [2.0]


async def test_retry_after_ms_wins_over_retry_after(
    server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep
) -> None:
    api = "openai-chat"
    server.enqueue(api, rate_limited(api, retry_after="9", retry_after_ms="1500"), text_response(api, "ok"))
    await collect(make(api))
    assert sleep.delays == [1.5]


async def test_retry_after_as_http_date(server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep) -> None:
    now = 1_900_000_000.0
    api = "anthropic"
    server.enqueue(api, rate_limited(api, retry_after=email.utils.formatdate(now + 3, usegmt=True)))
    server.enqueue(api, text_response(api, "ok"))
    await collect(make(api, clock=lambda: now))
    assert sleep.delays == [3.0]


async def test_backoff_without_a_hint(server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep) -> None:
    api = "openai-responses"
    server.enqueue(api, error_response(api, 500, "boom"), overloaded(api), text_response(api, "ok"))
    assert text_of(await collect(make(api))) == "ok"
    assert len(server.requests) == 3
    assert sleep.delays == [0.5, 1.0]


async def test_anthropic_529_overloaded_is_retried_then_surfaces(
    server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep
) -> None:
    server.enqueue("anthropic", *(overloaded("anthropic") for _ in range(3)))
    _, error = await collect_until_error(make("anthropic"))
    assert (error.kind, error.status, error.retryable) == ("overloaded", 529, True)
    assert len(server.requests) == 3 and sleep.delays == [0.5, 1.0]


async def test_too_long_retry_after_is_not_waited_for(
    server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep
) -> None:
    server.enqueue("openai-chat", rate_limited("openai-chat", retry_after="3600"))
    _, error = await collect_until_error(make("openai-chat"))
    assert (error.kind, error.retryable) == ("rateLimited", True)
    assert len(server.requests) == 1 and sleep.delays == []


async def test_x_should_retry_header(server: FakeProviderServer, make: MakeProvider, sleep: RecordingSleep) -> None:
    api = "openai-chat"
    server.enqueue(api, openai_error(500, "no", type="server_error", headers={"x-should-retry": "false"}))
    _, error = await collect_until_error(make(api))
    assert error.kind == "serverError" and len(server.requests) == 1
    server.enqueue(api, openai_error(422, "try again", headers={"x-should-retry": "true"}), text_response(api, "ok"))
    assert text_of(await collect(make(api))) == "ok"
    assert len(server.requests) == 3


async def test_connection_refused_is_retried(make: MakeProvider, sleep: RecordingSleep) -> None:
    closed = FakeProviderServer()
    await closed.start()
    await closed.stop()  # nothing listens on its port any more
    _, error = await collect_until_error(make("ollama", base_url=closed.url))
    assert (error.kind, error.retryable) == ("connection", True)
    assert sleep.delays == [0.5, 1.0]


NOT_RETRIED = [
    ("openai-chat", insufficient_quota("openai-chat"), "insufficientQuota", 429),
    ("openai-responses", insufficient_quota("openai-responses"), "insufficientQuota", 429),
    ("anthropic", insufficient_quota("anthropic"), "insufficientQuota", 400),
    ("openai-chat", openai_error(400, "too long", code="context_length_exceeded"), "contextLengthExceeded", 400),
    (
        "anthropic",
        error_response("anthropic", 400, "prompt is too long: 210000 tokens > 200000"),
        "contextLengthExceeded",
        400,
    ),
    ("openai-responses", error_response("openai-responses", 400, "bad"), "badRequest", 400),
    ("anthropic", error_response("anthropic", 401, "invalid x-api-key"), "authentication", 401),
    ("openai-chat", error_response("openai-chat", 403, "forbidden"), "authentication", 403),
    ("ollama", error_response("ollama", 404, "model 'm' not found"), "notFound", 404),
    ("anthropic", error_response("anthropic", 413, "request too large"), "badRequest", 413),
]


@pytest.mark.parametrize(("api", "response", "kind", "status"), NOT_RETRIED)
async def test_permanent_failures_are_not_retried(
    api: str,
    response: Any,
    kind: str,
    status: int,
    server: FakeProviderServer,
    make: MakeProvider,
    sleep: RecordingSleep,
) -> None:
    server.enqueue(api, response)
    _, error = await collect_until_error(make(api))
    assert (error.kind, error.status, error.retryable) == (kind, status, False)
    assert len(server.requests) == 1 and sleep.delays == []


# Failures after the stream started: never retried here, typed for the turn engine.

MID_STREAM_ERRORS = [
    ("openai-chat", lambda s: s.error("The server had an error", type="server_error"), "serverError"),
    ("openai-responses", lambda s: s.error("Slow down", code="rate_limit_exceeded"), "rateLimited"),
    ("openai-responses", lambda s: s.failed("context_length_exceeded", "Too long"), "contextLengthExceeded"),
    ("anthropic", lambda s: s.error("Overloaded", type="overloaded_error"), "overloaded"),
    ("ollama", lambda s: s.error("model runner has unexpectedly stopped"), "streamError"),
]


@pytest.mark.parametrize(("api", "add_error", "kind"), MID_STREAM_ERRORS)
async def test_mid_stream_error_event(
    api: str, add_error: Callable[[Any], Any], kind: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    script = stream_script(api).text("partial ", "answer")
    add_error(script)
    server.enqueue(api, script.response(), text_response(api, "never fetched"))
    events, error = await collect_until_error(make(api))
    assert text_of(events) == "partial answer"
    assert (error.kind, error.status) == (kind, None)
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
async def test_dropped_connection_mid_stream(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, stream_script(api).text("half").response(ending="drop"))
    events, error = await collect_until_error(make(api))
    assert text_of(events) == "half"
    assert error.kind == "connection" and error.retryable


@pytest.mark.parametrize("api", APIS)
async def test_stream_without_terminal_event_is_incomplete(
    api: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    """A cleanly ended body without [DONE] / response.completed / message_stop / done:true."""
    server.enqueue(api, stream_script(api).text("half").response(framing="close"))
    events, error = await collect_until_error(make(api))
    assert text_of(events) == "half"
    assert error.kind == "streamIncomplete" and error.retryable


async def test_chat_finish_without_done_marker_is_incomplete(server: FakeProviderServer, make: MakeProvider) -> None:
    """llama-cpp-python's failed automatic tool choice: a 200 stream that just ends."""
    server.enqueue("openai-chat", ChatStream().text("x").finish("stop", done=False).response())
    _, error = await collect_until_error(make("openai-chat"))
    assert error.kind == "streamIncomplete"


# Deadlines.

SHORT = ProviderTimeouts(first_event=1.0, idle=0.5)


@pytest.mark.parametrize("api", APIS)
async def test_stall_hits_the_idle_deadline(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, stream_script(api).text("a").pause(30).text("b").finish().response())
    events, error = await collect_until_error(make(api, timeouts=SHORT))
    assert text_of(events) == "a"
    assert isinstance(error, DeadlineExceeded)
    assert (error.kind, error.deadline) == ("timeout", "idle")
    assert await server.wait_finished(server.requests[0]) == "disconnected"


@pytest.mark.parametrize("api", ["openai-chat", "anthropic"])
async def test_keepalives_do_not_reset_the_idle_deadline(
    api: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    script = stream_script(api).text("a")
    for _ in range(100):  # bytes keep flowing for far longer than the idle deadline, but no events
        script.pause(0.05)
        script.ping() if api == "anthropic" else script.keepalive()
    server.enqueue(api, script.text("b").finish().response())
    events, error = await collect_until_error(make(api, timeouts=SHORT))
    assert text_of(events) == "a"
    assert isinstance(error, DeadlineExceeded) and error.deadline == "idle"


async def test_first_event_deadline(server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue("openai-chat", ChatStream(role_chunk=False).pause(30).text("late").finish().response())
    _, error = await collect_until_error(make("openai-chat", timeouts=SHORT))
    assert isinstance(error, DeadlineExceeded) and error.deadline == "firstEvent"
    assert len(server.requests) == 1  # headers arrived: the stream had started, so no retry


# Cancellation.


@pytest.mark.parametrize("api", APIS)
async def test_cancelling_the_consumer_closes_the_connection(
    api: str, server: FakeProviderServer, make: MakeProvider
) -> None:
    server.enqueue(api, stream_script(api).text("first").response(ending="hang"), text_response(api, "next"))
    provider = make(api)
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream(REQUEST):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.create_task(consume())
    await first_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server.wait_finished(server.requests[0]) == "disconnected"
    assert text_of(await collect(provider)) == "next"  # the client recovers with a fresh connection


async def test_closing_the_stream_early_closes_the_connection(server: FakeProviderServer, make: MakeProvider) -> None:
    """A consumer that stops reading (break) should close the stream explicitly, e.g. with aclosing."""
    server.enqueue("anthropic", AnthropicStream().text("first").response(ending="hang"))
    async with contextlib.aclosing(make("anthropic").stream(REQUEST)) as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                break
    assert await server.wait_finished(server.requests[0]) == "disconnected"


# API keys.


@pytest.mark.parametrize("api", APIS)
async def test_api_key_header(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, text_response(api, "x"))
    await collect(make(api))
    headers = server.requests[0].headers
    if api == "anthropic":
        assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in headers
    else:
        assert headers["authorization"] == f"Bearer {KEY}" and "x-api-key" not in headers


@pytest.mark.parametrize("api", APIS)
async def test_api_key_never_in_error_messages(api: str, server: FakeProviderServer, make: MakeProvider) -> None:
    server.enqueue(api, error_response(api, 401, f"Incorrect API key provided: {KEY}"))
    _, error = await collect_until_error(make(api))
    assert error.kind == "authentication"
    assert KEY not in error.message and KEY not in str(error) and KEY not in repr(error)
    assert "[redacted]" in error.message


async def test_missing_key_variable_is_an_authentication_error(server: FakeProviderServer, make: MakeProvider) -> None:
    with pytest.raises(ProviderError) as caught:
        make("anthropic", environ={})
    assert caught.value.kind == "authentication" and KEY_ENV in caught.value.message

    environ = {KEY_ENV: KEY}
    provider = make("openai-chat", environ=environ)
    del environ[KEY_ENV]  # read per request, so a vanished key fails the call without sending it
    _, error = await collect_until_error(provider)
    assert error.kind == "authentication" and server.requests == []


def test_official_endpoints_need_a_key_variable() -> None:
    definition = ModelDefinition(ref=ModelRef(provider="openai", name="gpt"), api="openai-responses")
    with pytest.raises(ProviderError) as caught:
        make_provider(definition, environ={})
    assert caught.value.kind == "authentication" and "api_key_env" in caught.value.message


async def test_default_base_urls() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(503, json={"error": {"message": "offline", "type": "server_error"}})

    transport = httpx.MockTransport(handler)
    no_retry = RetryPolicy(max_retries=0)
    for api in APIS:
        definition = ModelDefinition(ref=ModelRef(provider="p", name="m"), api=api, api_key_env="K")
        provider = make_provider(definition, {"K": "k"}, retry=no_retry, transport=transport)
        with pytest.raises(ProviderError):
            await collect(provider)
        await provider.aclose()
    assert seen == [
        "https://api.openai.com/v1/chat/completions",
        "https://api.openai.com/v1/responses",
        "https://api.anthropic.com/v1/messages",
        "http://127.0.0.1:11434/api/chat",
    ]


async def test_official_openai_chat_uses_max_completion_tokens() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, text="data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    transport = httpx.MockTransport(handler)
    for base_url in (None, "http://127.0.0.1:1/v1"):
        definition = ModelDefinition(ref=ModelRef(provider="p", name="m"), api="openai-chat", api_key_env="K")
        definition.base_url = base_url
        provider = make_provider(definition, {"K": "k"}, transport=transport)
        request = ModelRequest(model="m", max_output_tokens=77)
        assert completed(await collect(provider, request)).finish_reason == "stop"
        await provider.aclose()
    assert [(body.get("max_completion_tokens"), body.get("max_tokens")) for body in bodies] == [(77, None), (None, 77)]


async def test_request_bodies_are_the_json_httpx_would_write() -> None:
    """orjson writes the body (`compact_json.dumps`): the bytes httpx's `json=` wrote, with what orjson
    refuses (an integer past 64 bits, a lone surrogate) written by the json module instead."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, text="data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    definition = ModelDefinition(ref=ModelRef(provider="p", name="m"), api="openai-chat", api_key_env="K")
    definition.base_url = "http://127.0.0.1:1/v1"
    provider = make_provider(definition, {"K": "k"}, transport=httpx.MockTransport(handler))
    texts = ['caf\u00e9 \u2028 "quoted"\n\ttab \U0001f600 </script>', "lone \ud800 surrogate"]
    for text in texts:
        request = ModelRequest(model="m", messages=[Message(role="user", content=[Content(type="text", text=text)])])
        assert completed(await collect(provider, request)).finish_reason == "stop"
    await provider.aclose()
    first, second = sent
    assert first.headers["content-type"] == "application/json"
    assert first.headers["content-length"] == str(len(first.content))
    expected = httpx.Request("POST", "http://x", json=json.loads(first.content)).content
    assert first.content == expected  # byte for byte: compact, UTF-8, nothing escaped that need not be
    assert json.loads(second.content)["messages"][0]["content"] == texts[1]
    assert b"\\ud800" in second.content  # escaped: the body stays valid UTF-8
    assert json_body({"n": 2**70}) == b'{"n":1180591620717411303424}'


# The server in its own thread (for tests that drive a subprocess).


async def test_server_in_a_thread(make: MakeProvider) -> None:
    with FakeProviderServer.start_in_thread() as threaded:
        threaded.enqueue("ollama", text_response("ollama", "from ", "thread"))
        events = await collect(make("ollama", base_url=threaded.base_url("ollama")))
        assert text_of(events) == "from thread"
        assert threaded.requests[0].json["messages"] == [{"role": "user", "content": "hi"}]
