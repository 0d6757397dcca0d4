"""Prompts, answers and tool calls in the shape of OpenTelemetry's GenAI semantic conventions
(`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`): JSON text, put in
spans only when the user opts in. Images are named by their type, never sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openvaala_lsp.model import Content, Item, ItemType, ToolCall
from openvaala_lsp.providers.base import Message


def _parts(content: Sequence[Content]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.type == "text":
            parts.append({"type": "text", "content": part.text or ""})
        else:
            parts.append({"type": "blob", "modality": part.type, "mime_type": part.mime_type})
    return parts


def _call(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.call_id, "name": call.name, "arguments": call.arguments}


def input_messages(messages: Sequence[Message]) -> str:
    shaped = []
    for message in messages:
        if message.role == "tool":
            text = "".join(part.text or "" for part in message.content)
            shaped.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": message.tool_call_id, "response": text}],
                }
            )
        else:
            parts = _parts(message.content) + [_call(call) for call in message.tool_calls]
            shaped.append({"role": message.role, "parts": parts})
    return json.dumps(shaped, ensure_ascii=False)


def output_messages(items: Sequence[Item], finish_reason: str | None) -> str:
    parts: list[dict[str, Any]] = []
    for item in items:
        if item.type == ItemType.ASSISTANT_MESSAGE:
            parts += _parts(item.content or [])
        elif item.type == ItemType.TOOL_CALL and item.tool_call is not None:
            parts.append(_call(item.tool_call))
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish_reason or ""}], ensure_ascii=False)


def system_instructions(text: str) -> str:
    return json.dumps([{"type": "text", "content": text}], ensure_ascii=False)
