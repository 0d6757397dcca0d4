"""The `openai-completions` dialect: a conversation framed as a transcript for a base model, streamed
from a completions endpoint (the scripted fake server here; the real llama.cpp in test_local_model)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Self

import pytest
from fake_provider import FakeProviderServer, StreamScript, openai_error
from lsp_client import LspClient
from turn_helpers import Session, text_of

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import Content, ModelRef, TokenUsage, ToolCall
from openvaala_lsp.providers.base import (
    Completed,
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from openvaala_lsp.providers.factory import make_provider
from openvaala_lsp.providers.openai_completions import completion_body, transcript
from openvaala_lsp.providers.retry import RetryPolicy

ROUTE = "/v1/completions"


def text(role: str, value: str) -> Message:
    return Message(role=role, content=[Content(type="text", text=value)])


REQUEST = ModelRequest(model="m", messages=[text("user", "What is the capital of France?")])


class CompletionStream(StreamScript):
    """Completion chunks as llama-cpp-python streams them: one token of text per chunk, the finish
    reason in a chunk with empty text, no usage, then `data: [DONE]`."""

    api = "openai-completions"

    def _chunk(self, piece: str, finish_reason: str | None = None) -> None:
        choice = {"text": piece, "index": 0, "logprobs": None, "finish_reason": finish_reason}
        self._sse(None, {"id": "cmpl-fake", "object": "text_completion", "model": "m", "choices": [choice]})

    def text(self, *pieces: str) -> Self:
        for piece in pieces:
            self._chunk(piece)
        return self

    def finish(self, reason: str = "stop", *, usage: dict[str, Any] | None = None, done: bool = True) -> Self:
        self._chunk("", reason)
        if usage is not None:  # what OpenAI sends for stream_options.include_usage
            self._sse(
                None, {"id": "cmpl-fake", "object": "text_completion", "model": "m", "choices": [], "usage": usage}
            )
        if done:
            self._sse(None, "[DONE]")
        return self

    def error(self, message: str, *, type: str, code: str) -> Self:
        self._sse(None, {"error": {"message": message, "type": type, "param": None, "code": code}})
        return self


@pytest.fixture
async def server() -> AsyncIterator[FakeProviderServer]:
    async with FakeProviderServer() as started:
        yield started


@pytest.fixture
async def completions(server: FakeProviderServer) -> AsyncIterator[Provider]:
    definition = ModelDefinition(
        ref=ModelRef(provider="local", name="m"), api="openai-completions", base_url=server.url + "/v1"
    )
    provider = make_provider(definition, {}, retry=RetryPolicy(max_retries=0))
    yield provider
    await provider.aclose()


async def collect(provider: Provider, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def test_a_conversation_becomes_a_transcript_ending_with_the_assistants_turn() -> None:
    call = ToolCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}')
    request = ModelRequest(
        model="m",
        instructions="You are a helpful assistant.\n",
        messages=[
            text("user", "  What is the capital of France?\n"),
            text("assistant", "The capital of France is Paris."),
            text("user", "And of Italy?"),
            Message(role="assistant", tool_calls=[call]),  # tools never reach a base model
            Message(role="tool", tool_call_id="c1", content=[Content(type="text", text="print(1)")]),
            Message(role="assistant", content=[Content(type="text", text="Rome.")], tool_calls=[call]),
            Message(
                role="user",
                content=[
                    Content(type="text", text="What is this?"),
                    Content(type="image", mime_type="image/png", data="AA=="),
                ],
            ),
        ],
        tools=[ToolSpec(name="read_file", description="reads a file", parameters={"type": "object"})],
        max_output_tokens=64,
    )
    assert transcript(request) == (
        "You are a helpful assistant.\n\n"
        "User: Hi!\nAssistant: Hello! How can I help you?\n\n"
        "User: What is a verb?\nAssistant: A verb is a word that describes an action, such as run, read or write."
        " Most sentences have one.\n\n"
        "User: What is the capital of France?\nAssistant: The capital of France is Paris.\n\n"
        "User: And of Italy?\nAssistant: Rome.\n\n"
        "User: What is this?[image omitted: image/png]\nAssistant:"
    )
    body = completion_body(request)
    assert body["prompt"] == transcript(request)
    assert body["stop"] == ["\nUser:", "\nAssistant:"]  # the model must not write the next turn itself
    assert (body["max_tokens"], body["temperature"], body["stream"]) == (64, 0.0, True)
    assert "tools" not in body and "messages" not in body


def test_a_transcript_without_instructions_or_a_question() -> None:
    assert transcript(ModelRequest(model="m", messages=[text("user", "Hi")])).startswith("User: Hi!\n")
    # an answer that no question precedes (its tool results are left out) stays the assistant's turn
    request = ModelRequest(model="m", messages=[text("user", "Go"), text("user", "on"), text("assistant", "Done.")])
    assert transcript(request).endswith("User: Go\n\nUser: on\nAssistant: Done.\n\nAssistant:")
    # the servers' own default (16 tokens) is too short for an answer
    assert completion_body(ModelRequest(model="m"))["max_tokens"] == 512


async def test_streams_the_answer_without_the_framing_whitespace(
    server: FakeProviderServer, completions: Provider
) -> None:
    script = CompletionStream().text(" The", " capital", " of", " France", " is", " Paris", ".", "\n").finish()
    server.enqueue(ROUTE, script.response())
    events = await collect(completions)
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "The capital of France is Paris."
    assert events[-1] == Completed(finish_reason="stop", usage=None)  # llama.cpp reports none: estimated
    (request,) = server.requests_for(ROUTE)
    assert request.json["prompt"].endswith("User: What is the capital of France?\nAssistant:")
    assert request.json["model"] == "m"


async def test_whitespace_inside_the_answer_is_kept(server: FakeProviderServer, completions: Provider) -> None:
    script = CompletionStream().text("\n", " One", ".", "\n", "\n", "Two", " \n", "").finish("length")
    server.enqueue(ROUTE, script.response(write_size=3))
    events = await collect(completions)
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "One.\n\nTwo"
    assert isinstance(events[-1], Completed) and events[-1].finish_reason == "length"


async def test_reported_usage_is_normalised(server: FakeProviderServer, completions: Provider) -> None:
    usage = {"prompt_tokens": 90, "completion_tokens": 7, "total_tokens": 97}
    server.enqueue(ROUTE, CompletionStream().text(" Paris.").finish(usage=usage).response())
    events = await collect(completions)
    assert events[-1] == Completed(
        finish_reason="stop", usage=TokenUsage(input_tokens=90, output_tokens=7, total_tokens=97)
    )
    assert server.requests[0].json["stream_options"] == {"include_usage": True}


async def test_errors(server: FakeProviderServer, completions: Provider) -> None:
    message = "This model's maximum context length is 4096 tokens"
    server.enqueue(ROUTE, openai_error(400, message, code="context_length_exceeded"))
    with pytest.raises(ProviderError) as caught:
        await collect(completions)
    assert caught.value.kind == "contextLengthExceeded"
    # llama-cpp-python fails an over-long prompt after the 200 headers: an empty stream without [DONE]
    server.enqueue(ROUTE, CompletionStream().response(framing="close"))
    with pytest.raises(ProviderError) as caught:
        await collect(completions)
    assert caught.value.kind == "streamIncomplete"
    script = CompletionStream().text(" Pa").error("busy", type="server_error", code="server_is_overloaded")
    server.enqueue(ROUTE, script.response())
    with pytest.raises(ProviderError) as caught:
        await collect(completions)
    assert caught.value.kind == "overloaded"


async def test_cancelling_the_consumer_closes_the_connection(server: FakeProviderServer, completions: Provider) -> None:
    server.enqueue(ROUTE, CompletionStream().text(" first").response(ending="hang"))
    first = asyncio.Event()

    async def consume() -> None:
        async for event in completions.stream(REQUEST):
            if isinstance(event, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server.wait_finished(server.requests[0]) == "disconnected"


async def test_a_turn_with_a_base_model_offers_no_tools(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    """The default agent has tools; the transcript leaves them out and the turn streams an answer."""
    model = {
        "ref": {"provider": "local", "name": "base"},
        "api": "openai-completions",
        "baseUrl": provider.url + "/v1",
        "contextWindow": 4096,
    }
    provider.enqueue(ROUTE, CompletionStream().text(" Hello", "!", "\n").finish().response())
    lsp = await LspClient.spawn(home, cwd=workspace)
    await lsp.initialize([workspace], options={"eventBatchMs": 2})
    try:
        await lsp.call("setDefinitions", {"models": [model]})
        session = await Session.open(lsp)
        await session.submit("Say hello.")
        turn = await session.turn_completed()
        assert turn["status"] == "completed" and turn["usage"]["outputTokens"] > 0
        assert text_of((await session.items())[-1]) == "Hello!"
        (request,) = provider.requests_for(ROUTE)
        assert "tools" not in request.json
        assert request.json["prompt"].startswith("You are openvaala, a coding agent")  # the default agent
        assert request.json["prompt"].endswith("\n\nUser: Say hello.\nAssistant:")
    finally:
        await lsp.shutdown()
