"""An ACP prompt's content blocks as the runtime's Content, and a turn's end as ACP's stop reason."""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PromptResponse,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    Usage,
)

from openvaala_lsp.protocol.codes import CODES

Block = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock

STOP_REASONS: dict[str, StopReason] = {
    "completed": "end_turn",
    "maxTokens": "max_tokens",
    "userInterrupt": "cancelled",
    "cancelledByHook": "refusal",
    "limitReached": "max_turn_requests",
}


def invalid_params(message: str) -> RequestError:
    return RequestError(CODES["invalidParams"], message, {"kind": "invalidParams"})


def runtime_content(blocks: list[Block]) -> list[dict[str, Any]]:
    """Text and images as they are; an embedded text resource (a file the editor attached) as its text
    under its URI; a resource link as a link the agent can read with its tools."""
    content: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContentBlock):
            content.append({"type": "image", "mimeType": block.mime_type, "data": block.data})
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise invalid_params(f"$.prompt[{index}]: a binary resource; only text resources are taken")
            content.append({"type": "text", "text": f"{resource.uri}:\n```\n{resource.text}\n```"})
        elif isinstance(block, ResourceContentBlock):
            content.append({"type": "text", "text": f"[{block.name}]({block.uri})"})
        else:
            raise invalid_params(f"$.prompt[{index}]: audio is not taken (promptCapabilities.audio is false)")
    if not content:
        raise invalid_params("$.prompt: empty")
    return content


def prompt_response(turn: dict[str, Any]) -> PromptResponse:
    """The stop reason of a turn that ended; a turn that failed is the prompt's error."""
    reason = str(turn.get("reason") or "completed")
    stop = STOP_REASONS.get(reason)
    if stop is None:
        error = turn.get("error") or {}
        kind = "runtimeStopped" if reason == "runtimeStopped" else "internal"
        message = str(error.get("message") or f"the turn ended: {reason}")
        raise RequestError(CODES[kind], message, {"kind": kind, "reason": reason, "turnId": turn.get("id")})
    return PromptResponse(stop_reason=stop, usage=_usage(turn.get("usage") or {}))


def _usage(usage: dict[str, Any]) -> Usage | None:
    numbers = {k: v for k, v in usage.items() if isinstance(v, int) and v >= 0}
    if "totalTokens" not in numbers:
        return None
    return Usage(
        total_tokens=numbers["totalTokens"],
        input_tokens=numbers.get("inputTokens", 0),
        output_tokens=numbers.get("outputTokens", 0),
        thought_tokens=numbers.get("reasoningTokens"),
        cached_read_tokens=numbers.get("cachedInputTokens"),
        cached_write_tokens=numbers.get("cacheWriteTokens"),
    )
