"""Pure parts of the provider layer: request bodies, frame translators, error kinds, retry policy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openvaala_lsp.model import Content, ToolCall
from openvaala_lsp.providers.anthropic import MessagesTranslator, messages_body
from openvaala_lsp.providers.base import (
    Completed,
    Message,
    ModelRequest,
    ProviderError,
    StreamEvent,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    ToolSpec,
)
from openvaala_lsp.providers.errors import http_error, kind_for, stream_error
from openvaala_lsp.providers.ollama import ollama_body
from openvaala_lsp.providers.openai_chat import ChatTranslator, chat_body
from openvaala_lsp.providers.openai_responses import ResponsesTranslator, responses_body
from openvaala_lsp.providers.retry import RetryPolicy, retry_after_seconds
from openvaala_lsp.providers.sse import SSEEvent
from openvaala_lsp.providers.wire import load_object

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOL = ToolSpec(name="read_file", description="Read a file", parameters=SCHEMA)


def text(value: str) -> Content:
    return Content(type="text", text=value)


IMAGE = Content(type="image", mime_type="image/jpeg", data="/9j/4AAQ")
CONVERSATION = ModelRequest(
    model="m",
    instructions="Be brief.",
    max_output_tokens=1000,
    reasoning_effort="high",
    tools=[TOOL],
    messages=[
        Message(role="user", content=[text("Look at this"), IMAGE]),
        Message(
            role="assistant",
            content=[text("Reading both.")],
            tool_calls=[
                ToolCall(call_id="c1", name="read_file", arguments='{"path": "a"}'),
                ToolCall(call_id="c2", name="read_file", arguments='{"path": "b"}'),
            ],
        ),
        Message(role="tool", tool_call_id="c1", name="read_file", content=[text("A")]),
        Message(role="tool", tool_call_id="c2", name="read_file", content=[text("no such file")], is_error=True),
        Message(role="user", content=[text("Thanks")]),
    ],
)
CALLS_WIRE = [
    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
    {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "b"}'}},
]


def test_chat_body() -> None:
    assert chat_body(CONVERSATION) == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look at this"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                ],
            },
            {"role": "assistant", "content": "Reading both.", "tool_calls": CALLS_WIRE},
            {"role": "tool", "tool_call_id": "c1", "content": "A"},
            {"role": "tool", "tool_call_id": "c2", "content": "no such file"},
            {"role": "user", "content": "Thanks"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": SCHEMA}}
        ],
        "max_tokens": 1000,
        "reasoning_effort": "high",
    }


def test_chat_tool_call_turn_has_empty_string_content() -> None:
    """llama-cpp-python rejects `content: null`."""
    request = ModelRequest(
        model="m", messages=[Message(role="assistant", tool_calls=[ToolCall(call_id="c", name="f")])]
    )
    body = chat_body(request, max_tokens_field="max_completion_tokens")
    assert body["messages"] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ]
    assert "max_completion_tokens" not in body  # no limit asked for


def test_responses_body() -> None:
    body = responses_body(CONVERSATION)
    assert body == {
        "model": "m",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look at this"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ"},
                ],
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading both."}]},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": '{"path": "a"}'},
            {"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": '{"path": "b"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "A"},
            {"type": "function_call_output", "call_id": "c2", "output": "no such file"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
        ],
        "stream": True,
        "store": False,
        "instructions": "Be brief.",
        "tools": [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": SCHEMA}],
        "max_output_tokens": 1000,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }


def test_responses_skips_reasoning_it_cannot_replay() -> None:
    """Without encrypted content (or from another dialect) a reasoning item would point at storage
    that store:false does not keep."""
    reasoning: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "thinking", "thinking": "t", "signature": "s"},
    ]
    request = ModelRequest(model="m", messages=[Message(role="assistant", content=[text("x")], reasoning=reasoning)])
    assert [item["type"] for item in responses_body(request)["input"]] == ["message"]


def test_anthropic_body() -> None:
    body = messages_body(CONVERSATION)
    assert body == {
        "model": "m",
        "max_tokens": 1000,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look at this"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "c2", "name": "read_file", "input": {"path": "b"}},
                ],
            },
            {
                "role": "user",  # both results and the next user text in one message, results first
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "A"}]},
                    {
                        "type": "tool_result",
                        "tool_use_id": "c2",
                        "content": [{"type": "text", "text": "no such file"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
        "stream": True,
        "system": "Be brief.",
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": SCHEMA}],
        # No thinking: a 1000-token cap leaves no room for the 1024-token minimum budget.
    }


def test_anthropic_default_max_tokens_and_thinking_budget() -> None:
    request = ModelRequest(model="m", reasoning_effort="high", messages=[Message(role="user", content=[text("q")])])
    body = messages_body(request)
    assert body["max_tokens"] == 4096
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4095}
    assert messages_body(request, default_max_tokens=64000)["thinking"]["budget_tokens"] == 24576


def test_ollama_body() -> None:
    body = ollama_body(CONVERSATION)
    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look at this", "images": ["/9j/4AAQ"]},
            {
                "role": "assistant",
                "content": "Reading both.",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "read_file", "arguments": {"path": "a"}}},
                    {"id": "c2", "function": {"name": "read_file", "arguments": {"path": "b"}}},
                ],
            },
            {"role": "tool", "content": "A", "tool_name": "read_file", "tool_call_id": "c1"},
            {"role": "tool", "content": "no such file", "tool_name": "read_file", "tool_call_id": "c2"},
            {"role": "user", "content": "Thanks"},
        ],
        "stream": True,
        "tools": [
            {"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": SCHEMA}}
        ],
        "options": {"num_predict": 1000},
        "think": "high",
    }


# Translators fed directly.


def sse(payload: Any, event: str = "message") -> SSEEvent:
    return SSEEvent(event=event, data=payload if isinstance(payload, str) else json.dumps(payload))


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> SSEEvent:
    return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})


def feed_all(translator: Any, frames: list[Any]) -> list[StreamEvent]:
    return [event for frame in frames for event in translator.feed(frame)]


def test_chat_arguments_before_the_name_are_replayed_on_start() -> None:
    events = feed_all(
        ChatTranslator(),
        [
            chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": '{"a"'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ": 1}"}}]}),
            chunk({}, "tool_calls"),
            sse("[DONE]"),
        ],
    )
    assert events[:2] == [
        ToolCallStarted(index=0, call_id="c", name="f"),
        ToolCallDelta(index=0, arguments='{"a": 1}'),  # everything buffered until the name came
    ]
    assert events[2] == ToolCallDone(index=0, call=ToolCall(call_id="c", name="f", arguments='{"a": 1}'))


def test_chat_whole_calls_all_numbered_zero_stay_apart() -> None:
    calls = [{"index": 0, "id": f"c{n}", "function": {"name": "f", "arguments": f'{{"n": {n}}}'}} for n in (1, 2)]
    events = feed_all(ChatTranslator(), [chunk({"tool_calls": [call]}) for call in calls] + [sse("[DONE]")])
    done = [event.call for event in events if isinstance(event, ToolCallDone)]
    assert done == [
        ToolCall(call_id="c1", name="f", arguments='{"n": 1}'),
        ToolCall(call_id="c2", name="f", arguments='{"n": 2}'),
    ]


def test_chat_legacy_function_call_delta() -> None:
    events = feed_all(
        ChatTranslator(),
        [chunk({"function_call": {"name": "f", "arguments": "{}"}}), chunk({}, "function_call"), sse("[DONE]")],
    )
    assert events[-2:] == [
        ToolCallDone(index=0, call=ToolCall(call_id="call_0", name="f", arguments="{}")),
        Completed(finish_reason="tool_calls"),
    ]


def test_anthropic_tool_input_in_start_block_or_absent() -> None:
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {"q": "é"}}
    frames = [
        sse({"type": "content_block_start", "index": 0, "content_block": block}),
        sse({"type": "content_block_stop", "index": 0}),
        sse({"type": "content_block_start", "index": 1, "content_block": {**block, "id": "t2", "input": {}}}),
        sse({"type": "content_block_stop", "index": 1}),
        sse({"type": "message_stop"}),
    ]
    done = [event.call for event in feed_all(MessagesTranslator(), frames) if isinstance(event, ToolCallDone)]
    assert [call.arguments for call in done] == ['{"q": "é"}', "{}"]


def test_anthropic_ping_without_event_name_is_keepalive() -> None:
    assert MessagesTranslator().is_keepalive(sse({"type": "ping"}))
    assert not MessagesTranslator().is_keepalive(sse({"type": "content_block_stop", "index": 0}))


def test_responses_whole_function_call_item() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"x": 1}'}
    frames = [
        sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    events = feed_all(ResponsesTranslator(), frames)
    assert events == [
        ToolCallStarted(index=0, call_id="call_1", name="f"),
        ToolCallDone(index=0, call=ToolCall(call_id="call_1", name="f", arguments='{"x": 1}')),
        Completed(finish_reason="tool_calls"),
    ]


@pytest.mark.parametrize("translator", [ChatTranslator, ResponsesTranslator, MessagesTranslator])
def test_invalid_json_frame_is_a_stream_error(translator: Any) -> None:
    with pytest.raises(ProviderError) as caught:
        translator().feed(sse("{not json"))
    assert caught.value.kind == "streamError"


@pytest.mark.parametrize(
    ("frame", "value"),
    [
        ('{"n": NaN}', float("nan")),
        ('{"n": "\\ud83d"}', "\ud83d"),  # half of an emoji's surrogate pair, as a stream may split it
    ],
)
def test_frames_orjson_refuses_are_read_as_the_json_module_reads_them(frame: str, value: Any) -> None:
    assert repr(load_object(frame)["n"]) == repr(value)


def test_a_frame_that_is_not_an_object_is_a_stream_error() -> None:
    with pytest.raises(ProviderError, match="unexpected JSON"):
        load_object("[1, 2]")


# Error kinds.


@pytest.mark.parametrize(
    ("status", "payload", "kind"),
    [
        (
            429,
            {"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "quota"}},
            "insufficientQuota",
        ),
        (429, {"error": {"type": "requests", "code": "rate_limit_exceeded", "message": "slow"}}, "rateLimited"),
        (429, {"error": {"message": "x"}}, "rateLimited"),
        (
            400,
            {"error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "m"}},
            "contextLengthExceeded",
        ),
        (
            401,
            {"error": {"type": "invalid_request_error", "code": "invalid_api_key", "message": "m"}},
            "authentication",
        ),
        (401, {"error": {"type": "invalid_request_error", "code": None, "message": "m"}}, "authentication"),
        (404, {"error": {"type": "invalid_request_error", "code": "model_not_found", "message": "m"}}, "notFound"),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "overloaded"),
        (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}, "serverError"),
        (403, {"type": "error", "error": {"type": "permission_error", "message": "no"}}, "authentication"),
        (413, {"type": "error", "error": {"type": "request_too_large", "message": "big"}}, "badRequest"),
        (
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 1 > 0"}},
            "contextLengthExceeded",
        ),
        (404, {"error": "model 'x' not found"}, "notFound"),
        (408, None, "timeout"),
        (502, None, "serverError"),
    ],
)
def test_http_error_kinds(status: int, payload: Any, kind: str) -> None:
    body = json.dumps(payload).encode() if payload is not None else b"<html>gateway</html>"
    error = http_error(status, body)
    assert (error.kind, error.status) == (kind, status)
    assert error.message.startswith(f"HTTP {status}: ")


def test_stream_error_kinds() -> None:
    assert stream_error({"type": "error", "error": {"type": "overloaded_error", "message": "o"}}).kind == "overloaded"
    assert stream_error({"type": "error", "code": "server_error", "message": "s"}).kind == "serverError"
    assert stream_error({"error": "runner crashed"}).kind == "streamError"
    assert stream_error({"error": {"message": "?", "type": "weird"}}).retryable is False
    assert kind_for(None, ["insufficient_quota"], "") == "insufficientQuota"


# Retry policy.


def test_backoff_schedule_and_jitter() -> None:
    policy = RetryPolicy(jitter=lambda: 1.0)
    assert [policy.backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    for _ in range(200):
        assert 0.75 < RetryPolicy().jitter() <= 1.0


def test_retry_decisions() -> None:
    policy = RetryPolicy(jitter=lambda: 1.0, max_retries=2)
    assert policy.delay(0, kind="rateLimited", status=429, headers={}) == 0.5
    assert policy.delay(1, kind="serverError", status=500, headers={}) == 1.0
    assert policy.delay(2, kind="serverError", status=500, headers={}) is None  # retries used up
    assert policy.delay(0, kind="connection", status=None, headers=None) == 0.5
    assert policy.delay(0, kind="serverError", status=409, headers={}) == 0.5
    assert policy.delay(0, kind="badRequest", status=422, headers={}) is None
    assert policy.delay(0, kind="badRequest", status=422, headers={"x-should-retry": "true"}) == 0.5
    assert policy.delay(0, kind="serverError", status=503, headers={"x-should-retry": "false"}) is None
    for kind, status in [("insufficientQuota", 429), ("authentication", 401), ("badRequest", 400), ("notFound", 404)]:
        assert policy.delay(0, kind=kind, status=status, headers={"x-should-retry": "true"}) is None
    assert policy.delay(0, kind="rateLimited", status=429, headers={"retry-after": "0"}) == 0.5  # unusable hint
    assert policy.delay(0, kind="rateLimited", status=429, headers={"retry-after": "60"}) == 60.0
    assert policy.delay(0, kind="rateLimited", status=429, headers={"retry-after": "61"}) is None


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, clock=lambda: 1445412480.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after-ms": "nan", "retry-after": "2"}) == 2.0
    assert retry_after_seconds({}) is None
