"""Ollama's native chat API (`POST {base}/api/chat`): an NDJSON stream of message objects ending
with a `done: true` line. Tool calls arrive whole with object arguments; an `{"error": ...}` line can
appear inside a 200 stream.
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
)
from openvaala_lsp.providers.errors import stream_error
from openvaala_lsp.providers.wire import (
    PendingCall,
    arguments_object,
    function_tools,
    has_any,
    integer,
    joined_text,
    load_object,
    new_call_id,
    obj,
    string,
    text_with_image_notes,
    usage,
)

PATH = "/api/chat"
_EFFORT_LEVELS = ("low", "medium", "high")  # what `think` accepts as text (gpt-oss); others take a bool


def ollama_body(request: ModelRequest) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(_message(message) for message in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True}
    if request.tools:
        body["tools"] = function_tools(request.tools)
    if request.max_output_tokens:
        body["options"] = {"num_predict": request.max_output_tokens}
    effort = request.reasoning_effort
    if effort:
        body["think"] = effort if effort in _EFFORT_LEVELS else effort != "none"
    return body


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        wire: dict[str, Any] = {"role": "tool", "content": text_with_image_notes(message.content)}
        if message.name:
            wire["tool_name"] = message.name
        if message.tool_call_id:
            wire["tool_call_id"] = message.tool_call_id
        return wire
    wire = {"role": message.role, "content": joined_text(message.content)}
    images = [part.data for part in message.content if part.type == "image" and part.data]
    if images:
        wire["images"] = images  # bare base64, no data URL
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": call.call_id, "function": {"name": call.name, "arguments": arguments_object(call)}}
            for call in message.tool_calls
        ]
    return wire


def ollama_usage(final: dict[str, Any]) -> TokenUsage:
    """prompt_eval_count has version-dependent meaning (older servers count only uncached tokens)."""
    return usage(
        input_tokens=integer(final, "prompt_eval_count"),
        cached=integer(final, "prompt_eval_cached_count"),
        cache_write=0,
        output_tokens=integer(final, "eval_count"),
        reasoning=0,  # included in eval_count, not reported apart
    )


class ChatLineTranslator:
    """NDJSON lines to StreamEvents; the `done: true` line is the terminal event."""

    def __init__(self) -> None:
        self.finished = False
        self._calls = 0

    def is_keepalive(self, frame: str) -> bool:
        return False  # blank lines never become frames

    def feed(self, frame: str) -> list[StreamEvent]:
        payload = load_object(frame)
        if payload.get("error") is not None:
            raise stream_error(payload)
        events: list[StreamEvent] = []
        message = obj(payload, "message")
        thinking = string(message, "thinking")
        if thinking:
            events.append(ReasoningDelta(text=thinking))
        content = string(message, "content")
        if content:
            events.append(TextDelta(text=content))
        tool_calls = message.get("tool_calls")
        for raw in tool_calls if isinstance(tool_calls, list) else []:
            if isinstance(raw, dict):
                events.extend(self._whole_call(raw))
        if payload.get("done") is True:
            events.append(self._complete(payload))
        return events

    def _whole_call(self, raw: dict[str, Any]) -> list[StreamEvent]:
        function = obj(raw, "function")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            text = arguments
        else:
            text = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        call = PendingCall(
            index=self._calls, call_id=string(raw, "id") or new_call_id(), name=string(function, "name") or ""
        )
        call.parts.append(text)
        self._calls += 1
        return [*call.start(), call.finish()]

    def _complete(self, final: dict[str, Any]) -> Completed:
        self.finished = True
        reason = string(final, "done_reason") or "stop"
        if reason == "stop" and self._calls:
            reason = "tool_calls"
        reported = ollama_usage(final) if has_any(final, "prompt_eval_count", "eval_count") else None
        return Completed(finish_reason=reason, usage=reported)
