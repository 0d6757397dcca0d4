"""A tool result's content blocks as the text a model reads: text verbatim, everything else a
one-line summary (the tool layer carries text only)."""

from __future__ import annotations

import base64
import binascii
import json

import mcp_types as types

from openvaala_lsp.tools.truncate import truncate_text


def _size(data: str) -> str:
    try:
        count = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        count = len(data)
    return f"{count} bytes"


def block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, types.ResourceLink):
        described = f" - {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{described}]"
    resource = block.resource
    mime = f", {resource.mime_type}" if resource.mime_type else ""
    if isinstance(resource, types.TextResourceContents):
        return f"[resource: {resource.uri}{mime}]\n{resource.text}"
    return f"[resource: {resource.uri}{mime}, {_size(resource.blob)}]"


def result_text(result: types.CallToolResult) -> str:
    parts = [block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        # Servers may answer with structured content alone; the model still needs to see it.
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    return truncate_text(text) if text else "(no output)"
