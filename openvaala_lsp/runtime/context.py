"""What a model sees: a session's items turned into a provider request, and token estimates.

Estimates use UTF-8 bytes / 4 (what Codex, opencode and Claude Code use); provider-reported usage
replaces them whenever a call reports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import orjson

from openvaala_lsp.model import Content, Item, ItemStatus, ItemType, ToolCall
from openvaala_lsp.providers.base import Message, ModelRequest, ToolSpec
from openvaala_lsp.tools.base import Tool

BYTES_PER_TOKEN = 4


def estimate_text(text: str) -> int:
    return (len(text.encode()) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def estimate_json(value: Any) -> int:
    """Tokens of `value` as a request carries it: compact JSON (`compact_json.dumps`). By
    orjson: every tool's schema is measured at every model call (the json module was 1% of a
    streaming host's time, py-spy)."""
    try:
        size = len(orjson.dumps(value))
    except TypeError:  # what orjson refuses (an integer past 64 bits, a lone surrogate): a rough size
        size = len(repr(value).encode(errors="replace"))
    return (size + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def estimate_item(item: Item) -> int:
    size = 0
    for content in item.content or ():
        size += estimate_text(content.text or "") if content.type == "text" else 1000  # an image, roughly
    if item.tool_call is not None:
        size += estimate_text(item.tool_call.name) + estimate_text(item.tool_call.arguments)
    for data in item.provider_data or ():
        size += estimate_json(data)
    return size + 4  # message framing


def estimate_tools(tools: Iterable[ToolSpec]) -> int:
    return sum(estimate_json({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools)


PRUNED_TEXT = "[output cleared from the context to save room; run the tool again if you need it]"
# the images one request carries, newest first: providers refuse more (Anthropic takes 100 images
# and 32 MB a request), and each image is held three times while a request is built and sent
MAX_REQUEST_IMAGES = 20
MAX_REQUEST_IMAGE_BYTES = 30 * 1024 * 1024


def model_items(history: Sequence[Item]) -> list[Item]:
    """What the model sees of a session's history: everything from its last summarizing compaction on
    (whose text stands for what came before), with the output of pruned tool results cleared and
    images past the newest `MAX_REQUEST_IMAGES` (or `MAX_REQUEST_IMAGE_BYTES`) left out. The log
    itself keeps every item for people."""
    start = 0
    pruned: set[str] = set()
    for index, item in enumerate(history):
        if item.type == ItemType.COMPACTION and item.compaction is not None:
            pruned.update(item.compaction.pruned_item_ids)
            if item.compaction.summarized:
                start = index
    seen = [
        attrs.evolve(item, content=[Content(type="text", text=PRUNED_TEXT)]) if item.id in pruned else item
        for item in history[start:]
    ]
    return _newest_images(seen)


def _newest_images(items: list[Item]) -> list[Item]:
    """`items` with the images past the request's budget (counted from the newest) replaced by a note."""
    count = size = 0
    kept: list[Item] = []
    for item in reversed(items):
        content = item.content or []
        if any(part.type == "image" for part in content):
            parts = []
            for part in reversed(content):
                if part.type == "image":
                    count += 1
                    size += _decoded_size(part)
                    if count > MAX_REQUEST_IMAGES or size > MAX_REQUEST_IMAGE_BYTES:
                        part = Content(type="text", text=_left_out(part))
                parts.append(part)
            item = attrs.evolve(item, content=parts[::-1])
        kept.append(item)
    return kept[::-1]


def _decoded_size(image: Content) -> int:
    return len((image.data or "").rstrip("=")) * 3 // 4  # base64: 4 characters for 3 bytes


def _left_out(image: Content) -> str:
    size = _decoded_size(image)
    return (
        f"[an earlier image ({image.mime_type}, {size / 2**20:.1f} MiB) left out: a request carries the newest "
        f"{MAX_REQUEST_IMAGES} images, {MAX_REQUEST_IMAGE_BYTES // 2**20} MiB at most]"
    )


def estimate_request(instructions: str, tools: Iterable[ToolSpec], history: Sequence[Item]) -> int:
    """Tokens a request would hold: instructions, tool specs and the items the model sees."""
    return estimate_text(instructions) + estimate_tools(tools) + sum(estimate_item(i) for i in model_items(history))


def tool_specs(tools: Iterable[Tool]) -> list[ToolSpec]:
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters) for t in tools]


def item_text(item: Item) -> str:
    return "".join(c.text or "" for c in item.content or () if c.type == "text")


def to_messages(items: Iterable[Item]) -> list[Message]:
    """Items in log order as provider messages. Consecutive assistant-side items (text, reasoning,
    tool calls) of one model response form one assistant message; tool results follow it."""
    messages: list[Message] = []
    assistant: Message | None = None
    for item in items:
        if item.type in (ItemType.ASSISTANT_MESSAGE, ItemType.REASONING, ItemType.TOOL_CALL):
            if assistant is None:
                assistant = Message(role="assistant")
                messages.append(assistant)
            if item.type == ItemType.ASSISTANT_MESSAGE:
                assistant.content.extend(c for c in item.content or () if c.type == "text" and c.text)
            elif item.type == ItemType.REASONING:
                if item.provider_data:
                    assistant.reasoning = (assistant.reasoning or []) + item.provider_data
            elif item.tool_call is not None:
                assistant.tool_calls.append(item.tool_call)
            continue
        if item.type == ItemType.TOOL_RESULT and item.tool_result is not None:
            messages.append(
                Message(
                    role="tool",
                    tool_call_id=item.tool_result.call_id,
                    name=item.tool_result.name,
                    content=list(item.content or [Content(type="text", text="")]),
                    is_error=item.tool_result.is_error,
                )
            )
        elif item.type == ItemType.USER_MESSAGE:
            if item.status == ItemStatus.WITHDRAWN:
                continue  # a prompt a hook blocked: kept in the history, never shown to the model
            messages.append(Message(role="user", content=list(item.content or ())))
        elif item.type == ItemType.COMPACTION:
            if not item_text(item):
                continue  # a compaction that only cleared tool outputs has nothing to say
            messages.append(Message(role="user", content=list(item.content or ())))
        else:
            continue  # error items and unknown kinds are for people, not for the model
        assistant = None
    return _answer_dangling_calls(messages)


def _answer_dangling_calls(messages: list[Message]) -> list[Message]:
    """Every tool call needs a result before the next request (providers reject the history
    otherwise); an interrupted turn can leave calls without one."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    fixed: list[Message] = []
    for message in messages:
        fixed.append(message)
        for call in message.tool_calls:
            if call.call_id not in answered:
                fixed.append(_interrupted_result(call))
    return fixed


def _interrupted_result(call: ToolCall) -> Message:
    return Message(
        role="tool",
        tool_call_id=call.call_id,
        name=call.name,
        content=[Content(type="text", text="[the tool did not run: the turn was interrupted]")],
        is_error=True,
    )


def build_request(
    model: str,
    instructions: str,
    items: Iterable[Item],
    tools: list[ToolSpec],
    *,
    max_output_tokens: int | None,
    reasoning_effort: str | None,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        instructions=instructions,
        messages=to_messages(model_items(list(items))),
        tools=tools,
        max_output_tokens=max_output_tokens,
        reasoning_effort=reasoning_effort,
    )
