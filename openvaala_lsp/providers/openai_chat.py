"""OpenAI Chat Completions (`POST {base}/chat/completions`), also spoken by Ollama's /v1,
llama-cpp-python's server, vLLM and most "OpenAI-compatible" servers.

Compatibility points: tool-call fragments are keyed by index with id and name taken once (llama-cpp-python
repeats both on every fragment), a whole call may arrive in one chunk (Ollama), reasoning text comes as
`reasoning_content` or `reasoning`, usage arrives in a final chunk with `choices: []` or not at all, and
assistant tool-call turns carry `content: ""` because llama-cpp-python rejects null.
"""

from __future__ import annotations

import json
from typing import Any

from openvaala_lsp.model import TokenUsage
from openvaala_lsp.providers.base import (
    Completed,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from openvaala_lsp.providers.errors import stream_error
from openvaala_lsp.providers.sse import SSEEvent
from openvaala_lsp.providers.wire import (
    PendingCall,
    data_url,
    function_tools,
    has_images,
    integer,
    joined_text,
    load_object,
    obj,
    openai_usage,
    string,
    text_with_image_notes,
)

PATH = "/chat/completions"


def chat_body(request: ModelRequest, *, max_tokens_field: str = "max_tokens") -> dict[str, Any]:
    """The request body. `max_tokens_field` is "max_completion_tokens" for OpenAI itself (its reasoning
    models reject the legacy name) and "max_tokens" for compatible servers that only know that one."""
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(_message(message) for message in request.messages)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = function_tools(request.tools)
    if request.max_output_tokens:
        body[max_tokens_field] = request.max_output_tokens
    if request.reasoning_effort:
        body["reasoning_effort"] = request.reasoning_effort
    return body


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": text_with_image_notes(message.content),
        }
    if message.role == "assistant":
        # Reasoning is not sent back: Chat Completions has no field for it.
        wire: dict[str, Any] = {"role": "assistant", "content": joined_text(message.content)}
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in message.tool_calls
            ]
        return wire
    if has_images(message.content):
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if part.type == "text":
                parts.append({"type": "text", "text": part.text or ""})
            elif part.type == "image" and part.data:
                parts.append({"type": "image_url", "image_url": {"url": data_url(part)}})
        return {"role": message.role, "content": parts}
    return {"role": message.role, "content": joined_text(message.content)}


class ChunkTranslator:
    """What Chat Completions and Completions streams share: each chunk's `choices` (the first is
    read, by `_choice`), usage in a chunk of its own, an error as an `error` event or field, and
    `data: [DONE]` as the terminal event (`_complete`)."""

    def __init__(self) -> None:
        self.finished = False
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None

    def is_keepalive(self, frame: SSEEvent) -> bool:
        return False  # keep-alives are SSE comments, which never become frames

    def feed(self, frame: SSEEvent) -> list[StreamEvent]:
        if frame.event not in ("message", "error"):
            return []  # named events are not part of these dialects
        data = frame.data.strip()
        if data == "[DONE]":
            self.finished = True
            return self._complete()
        chunk = load_object(data)
        if frame.event == "error" or chunk.get("error") is not None:
            raise stream_error(chunk)
        reported = openai_usage(chunk.get("usage"), "prompt", "completion")
        if reported is not None:
            self._usage = reported
        events: list[StreamEvent] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict) and integer(choice, "index") == 0:
                self._choice(choice, events)
        return events

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        raise NotImplementedError

    def _complete(self) -> list[StreamEvent]:
        raise NotImplementedError


class ChatTranslator(ChunkTranslator):
    """Chat Completions chunks to StreamEvents."""

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[int, PendingCall] = {}  # by the server's index
        self._ordered: list[PendingCall] = []

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        delta = obj(choice, "delta")
        reasoning = string(delta, "reasoning_content") or string(delta, "reasoning")
        if reasoning:
            events.append(ReasoningDelta(text=reasoning))
        for key in ("content", "refusal"):
            text = string(delta, key)
            if text:
                events.append(TextDelta(text=text))
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            for position, fragment in enumerate(tool_calls):
                if isinstance(fragment, dict):
                    self._tool_fragment(fragment, position, events)
        elif isinstance(delta.get("function_call"), dict):
            # Legacy single-function delta, only when no tool_calls came with it (llama-cpp-python sends both).
            self._tool_fragment({"index": 0, "function": delta["function_call"]}, 0, events)
        reason = string(choice, "finish_reason")
        if reason:
            self._finish_reason = reason
            self._finish_calls(events)

    def _tool_fragment(self, fragment: dict[str, Any], position: int, events: list[StreamEvent]) -> None:
        index = fragment.get("index")
        key = index if isinstance(index, int) and not isinstance(index, bool) else position
        function = obj(fragment, "function")
        call_id = string(fragment, "id")
        call = self._calls.get(key)
        if call is not None and call_id and call.call_id and call_id != call.call_id:
            # A different id under a used index: servers that number every whole call 0.
            key = max(self._calls) + 1
            call = None
        if call is None:
            call = PendingCall(index=len(self._ordered))
            self._calls[key] = call
            self._ordered.append(call)
        if call.done:
            return
        if not call.call_id and call_id:
            call.call_id = call_id
        name = string(function, "name")
        if not call.name and name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object instead of JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            call.parts.append(arguments)
            if call.started:
                events.append(ToolCallDelta(index=call.index, arguments=arguments))
        if not call.started and call.name:
            if not call.call_id:
                call.call_id = f"call_{call.index}"
            events.extend(call.start())

    def _finish_calls(self, events: list[StreamEvent]) -> None:
        for call in self._ordered:
            if call.done:
                continue
            if not call.started:
                call.call_id = call.call_id or f"call_{call.index}"
                events.extend(call.start())
            events.append(call.finish())

    def _complete(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        self._finish_calls(events)
        reason = self._finish_reason or "stop"
        if reason == "function_call" or (reason == "stop" and self._ordered):
            reason = "tool_calls"  # some compatible servers report "stop" after tool calls
        events.append(Completed(finish_reason=reason, usage=self._usage))
        return events
