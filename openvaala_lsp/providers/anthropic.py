"""Anthropic Messages API (`POST {base}/v1/messages`, `anthropic-version: 2023-06-01`).

Thinking blocks come back as ReasoningDone data (with their signature) and are sent back unchanged;
tool results become `tool_result` blocks of a user message; usage in `message_delta` is cumulative.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from openvaala_lsp.model import TokenUsage
from openvaala_lsp.providers.base import (
    Completed,
    Message,
    ModelRequest,
    ReasoningDelta,
    ReasoningDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from openvaala_lsp.providers.errors import stream_error
from openvaala_lsp.providers.sse import SSEEvent
from openvaala_lsp.providers.wire import (
    PendingCall,
    arguments_object,
    has_any,
    integer,
    load_object,
    obj,
    string,
    usage,
)

PATH = "/v1/messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_MIN_THINKING_BUDGET = 1024  # the API's floor for budget_tokens
_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32768}
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_REASONING_BLOCKS = ("thinking", "redacted_thinking")


def messages_body(request: ModelRequest, *, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    max_tokens = request.max_output_tokens or default_max_tokens
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": _messages(request.messages),
        "stream": True,
    }
    if request.instructions:
        body["system"] = request.instructions
    if request.tools:
        body["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in request.tools
        ]
    effort = request.reasoning_effort
    if effort and effort != "none":
        # Effort maps to a thinking budget, which must stay below max_tokens.
        budget = min(_THINKING_BUDGETS.get(effort, _THINKING_BUDGETS["medium"]), max_tokens - 1)
        if budget >= _MIN_THINKING_BUDGET:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return body


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Consecutive messages of one wire role are merged: the results of parallel tool calls must
    all be in the one user message that follows the assistant turn."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue  # the API rejects empty content
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        content = _content_blocks(message)
        if content:
            result["content"] = content
        if message.is_error:
            result["is_error"] = True
        return [result]
    if message.role == "assistant":
        blocks = [data for data in message.reasoning or [] if data.get("type") in _REASONING_BLOCKS]
        blocks.extend(_content_blocks(message))
        blocks.extend(
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments_object(call)}
            for call in message.tool_calls
        )
        return blocks
    return _content_blocks(message)


def _content_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text" and part.text:  # empty text blocks are rejected
            blocks.append({"type": "text", "text": part.text})
        elif part.type == "image" and part.data:
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": part.mime_type or "image/png", "data": part.data},
                }
            )
    return blocks


def anthropic_usage(raw: dict[str, Any]) -> TokenUsage:
    """Anthropic's input_tokens excludes cache reads and writes; the normalised input includes both."""
    cache_read = integer(raw, "cache_read_input_tokens")
    cache_write = integer(raw, "cache_creation_input_tokens")
    return usage(
        input_tokens=integer(raw, "input_tokens") + cache_read + cache_write,
        cached=cache_read,
        cache_write=cache_write,
        output_tokens=integer(raw, "output_tokens"),
        reasoning=integer(obj(raw, "output_tokens_details"), "thinking_tokens"),
    )


@attrs.define(kw_only=True)
class _Block:
    type: str
    call: PendingCall | None = None
    initial_input: str | None = None  # a tool_use block that arrived with its input filled
    thinking: list[str] = attrs.Factory(list)
    signature: str = ""
    whole: dict[str, Any] | None = None  # redacted thinking arrives complete


class MessagesTranslator:
    """Messages stream events to StreamEvents; `message_stop` is the terminal event."""

    def __init__(self) -> None:
        self.finished = False
        self._blocks: dict[int, _Block] = {}
        self._calls: list[PendingCall] = []
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None

    def is_keepalive(self, frame: SSEEvent) -> bool:
        if frame.event == "ping":
            return True
        return '"ping"' in frame.data and string(load_object(frame.data), "type") == "ping"

    def feed(self, frame: SSEEvent) -> list[StreamEvent]:
        payload = load_object(frame.data)
        kind = string(payload, "type") or frame.event
        if kind == "message_start":
            self._merge_usage(obj(obj(payload, "message"), "usage"))
        elif kind == "content_block_start":
            return self._block_start(integer(payload, "index"), obj(payload, "content_block"))
        elif kind == "content_block_delta":
            return self._block_delta(integer(payload, "index"), obj(payload, "delta"))
        elif kind == "content_block_stop":
            return self._block_stop(integer(payload, "index"))
        elif kind == "message_delta":
            self._stop_reason = string(obj(payload, "delta"), "stop_reason") or self._stop_reason
            self._merge_usage(obj(payload, "usage"))
        elif kind == "message_stop":
            return self._complete()
        elif kind == "error":
            raise stream_error(payload)
        return []  # ping without an event name, and future event types

    def _merge_usage(self, raw: dict[str, Any]) -> None:
        # message_delta numbers are cumulative totals, so later values replace earlier ones.
        self._usage.update({key: value for key, value in raw.items() if value is not None})

    def _block_start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = string(block, "type") or ""
        state = _Block(type=kind)
        self._blocks[index] = state
        if kind == "text":
            text = string(block, "text")
            return [TextDelta(text=text)] if text else []
        if kind == "tool_use":
            call = PendingCall(
                index=len(self._calls),
                call_id=string(block, "id") or f"call_{len(self._calls)}",
                name=string(block, "name") or "",
            )
            self._calls.append(call)
            state.call = call
            initial = block.get("input")
            if isinstance(initial, dict) and initial:
                state.initial_input = json.dumps(initial, ensure_ascii=False)
            return list(call.start())
        if kind == "thinking":
            text = string(block, "thinking") or ""
            state.thinking.append(text)
            state.signature = string(block, "signature") or ""
            return [ReasoningDelta(text=text)] if text else []
        if kind == "redacted_thinking":
            state.whole = block
        return []

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        state = self._blocks.get(index)
        kind = string(delta, "type")
        if kind == "text_delta":
            text = string(delta, "text")
            return [TextDelta(text=text)] if text else []
        if state is None:
            return []
        if kind == "input_json_delta" and state.call is not None and not state.call.done:
            fragment = string(delta, "partial_json")
            if fragment:
                state.call.parts.append(fragment)
                return [ToolCallDelta(index=state.call.index, arguments=fragment)]
        elif kind == "thinking_delta":
            text = string(delta, "thinking")
            if text:
                state.thinking.append(text)
                return [ReasoningDelta(text=text)]
        elif kind == "signature_delta":
            state.signature += string(delta, "signature") or ""
        return []

    def _block_stop(self, index: int) -> list[StreamEvent]:
        state = self._blocks.pop(index, None)
        if state is None:
            return []
        if state.call is not None and not state.call.done:
            # No fragments means the tool takes no arguments (or they came in the start block).
            return [state.call.finish(None if state.call.parts else state.initial_input)]
        if state.type == "thinking":
            data = {"type": "thinking", "thinking": "".join(state.thinking), "signature": state.signature}
            return [ReasoningDone(data=data)]
        if state.whole is not None:
            return [ReasoningDone(data=state.whole)]
        return []

    def _complete(self) -> list[StreamEvent]:
        events: list[StreamEvent] = [call.finish() for call in self._calls if not call.done]
        reason = self._stop_reason or ("tool_use" if self._calls else "end_turn")
        reported = (
            anthropic_usage(self._usage)
            if has_any(self._usage, "input_tokens", "output_tokens", "cache_read_input_tokens")
            else None
        )
        events.append(Completed(finish_reason=_STOP_REASONS.get(reason, reason), usage=reported))
        self.finished = True
        return events
