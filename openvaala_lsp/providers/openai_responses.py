"""OpenAI Responses API (`POST {base}/responses`), used statelessly: `store: false`, the whole
history re-sent as input items each call, reasoning items carried back with their encrypted content.
"""

from __future__ import annotations

from typing import Any

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
    data_url,
    has_images,
    integer,
    joined_text,
    load_object,
    obj,
    openai_usage,
    string,
)

PATH = "/responses"
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def responses_body(request: ModelRequest) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for message in request.messages:
        items.extend(_items(message))
    body: dict[str, Any] = {"model": request.model, "input": items, "stream": True, "store": False}
    if request.instructions:
        body["instructions"] = request.instructions
    if request.tools:
        body["tools"] = [
            {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}
            for tool in request.tools
        ]
    if request.max_output_tokens:
        body["max_output_tokens"] = request.max_output_tokens
    if request.reasoning_effort:
        reasoning: dict[str, Any] = {"effort": request.reasoning_effort}
        if request.reasoning_effort != "none":
            reasoning["summary"] = "auto"
        body["reasoning"] = reasoning
    # Encrypted reasoning is what makes stateless calls keep the model's thinking; asking for it from
    # a model without reasoning is an error, so only when reasoning is requested or was produced.
    if request.reasoning_effort or any(message.reasoning for message in request.messages):
        body["include"] = ["reasoning.encrypted_content"]
    return body


def _items(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": _output(message)}]
    if message.role == "assistant":
        items = [_reasoning_item(data) for data in message.reasoning or [] if _replayable(data)]
        text = joined_text(message.content)
        if text:
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        items.extend(
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        )
        return items
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text":
            parts.append({"type": "input_text", "text": part.text or ""})
        elif part.type == "image" and part.data:
            parts.append({"type": "input_image", "image_url": data_url(part)})
    return [{"type": "message", "role": message.role, "content": parts}]


def _output(message: Message) -> str | list[dict[str, Any]]:
    if not has_images(message.content):
        return joined_text(message.content)
    return [
        {"type": "input_text", "text": part.text or ""}
        if part.type == "text"
        else {"type": "input_image", "image_url": data_url(part)}
        for part in message.content
        if part.type == "text" or part.data
    ]


def _replayable(data: dict[str, Any]) -> bool:
    """Only Responses reasoning items with encrypted content can be sent back: with `store: false`
    the server has no copy to look an id up in (other dialects' blocks are skipped too)."""
    return data.get("type") == "reasoning" and bool(data.get("encrypted_content"))


def _reasoning_item(data: dict[str, Any]) -> dict[str, Any]:
    # The item id refers to server-side storage, which store:false does not have.
    return {key: value for key, value in data.items() if key not in ("id", "status")}


class ResponsesTranslator:
    """Responses stream events to StreamEvents. Terminal: response.completed or response.incomplete;
    response.failed and the top-level error event raise."""

    def __init__(self) -> None:
        self.finished = False
        self._calls: list[PendingCall] = []
        self._by_item: dict[str, PendingCall] = {}
        self._by_output: dict[int, PendingCall] = {}
        self._summary_parts: dict[str, int] = {}  # reasoning item id -> last summary index seen

    def is_keepalive(self, frame: SSEEvent) -> bool:
        return False  # keep-alives are SSE comments, which never become frames

    def feed(self, frame: SSEEvent) -> list[StreamEvent]:
        data = frame.data.strip()
        if data == "[DONE]":
            return []  # some compatible servers add it; the terminal events decide
        payload = load_object(data)
        kind = string(payload, "type") or frame.event
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            text = string(payload, "delta")
            return [TextDelta(text=text)] if text else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning_delta(payload)
        if kind == "response.output_item.added":
            return self._item_added(obj(payload, "item"), integer(payload, "output_index"))
        if kind == "response.function_call_arguments.delta":
            return self._arguments_delta(payload)
        if kind == "response.output_item.done":
            return self._item_done(obj(payload, "item"), integer(payload, "output_index"))
        if kind in ("response.completed", "response.incomplete"):
            return self._complete(obj(payload, "response"), incomplete=kind == "response.incomplete")
        if kind == "response.failed":
            failure = obj(obj(payload, "response"), "error")
            raise stream_error(failure or payload)
        if kind == "error":
            raise stream_error(payload)
        return []  # lifecycle, content-part, built-in tool and future event types

    def _reasoning_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        text = string(payload, "delta") or ""
        item_id = string(payload, "item_id") or ""
        part = integer(payload, "summary_index")
        previous = self._summary_parts.get(item_id)
        self._summary_parts[item_id] = part
        if previous is not None and part > previous:
            text = "\n\n" + text  # summary parts are separate paragraphs
        return [ReasoningDelta(text=text)] if text else []

    def _item_added(self, item: dict[str, Any], output_index: int) -> list[StreamEvent]:
        if item.get("type") != "function_call":
            return []
        call = self._register(item, output_index)
        return list(call.start())

    def _register(self, item: dict[str, Any], output_index: int) -> PendingCall:
        call = PendingCall(
            index=len(self._calls),
            call_id=string(item, "call_id") or string(item, "id") or f"call_{len(self._calls)}",
            name=string(item, "name") or "",
        )
        self._calls.append(call)
        item_id = string(item, "id")
        if item_id:
            self._by_item[item_id] = call
        self._by_output[output_index] = call
        return call

    def _lookup(self, payload: dict[str, Any]) -> PendingCall | None:
        item_id = string(payload, "item_id")
        if item_id and item_id in self._by_item:
            return self._by_item[item_id]
        return self._by_output.get(integer(payload, "output_index"))

    def _arguments_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        call = self._lookup(payload)
        fragment = string(payload, "delta")
        if call is None or call.done or not fragment:
            return []
        call.parts.append(fragment)
        return [ToolCallDelta(index=call.index, arguments=fragment)]

    def _item_done(self, item: dict[str, Any], output_index: int) -> list[StreamEvent]:
        kind = item.get("type")
        if kind == "reasoning":
            return [ReasoningDone(data=item)]
        if kind != "function_call":
            return []
        events: list[StreamEvent] = []
        call = self._lookup({"item_id": item.get("id"), "output_index": output_index})
        if call is None:  # the item arrived whole, without an `added` event
            call = self._register(item, output_index)
            events.extend(call.start())
        if not call.done:
            events.append(call.finish(string(item, "arguments")))
        return events

    def _complete(self, response: dict[str, Any], *, incomplete: bool) -> list[StreamEvent]:
        events: list[StreamEvent] = [call.finish() for call in self._calls if not call.done]
        if incomplete:
            reason = string(obj(response, "incomplete_details"), "reason") or "max_output_tokens"
            finish_reason = _INCOMPLETE_REASONS.get(reason, reason)
        else:
            finish_reason = "tool_calls" if self._calls else "stop"
        reported = openai_usage(obj(response, "usage"), "input", "output")
        events.append(Completed(finish_reason=finish_reason, usage=reported))
        self.finished = True
        return events
