"""The runtime's session events and logged items as ACP `session/update`s: one translator per ACP
session, keeping what it needs between events (which item an index streams, which toolCall item a
result answers, which prompts this editor sent itself)."""

from __future__ import annotations

import json
import os
from typing import Any

import attrs
from acp import helpers
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UsageUpdate,
    UserMessageChunk,
)

from openvaala_lsp.acp_front import diffs

Update = AgentMessageChunk | AgentThoughtChunk | UserMessageChunk | ToolCallStart | ToolCallProgress | UsageUpdate

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit": "edit",
    "shell": "execute",
    "grep": "search",
    "glob": "search",
    "fetch": "fetch",
    "web_fetch": "fetch",
    "skill": "think",
}
MAX_DIFF_FILE_BYTES = 4 << 20  # a file read back for a diff's whole texts; past that the hunks do


def tool_kind(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def _arguments(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # the model's text, kept verbatim when it is no JSON


def title(name: str, arguments: Any) -> str:
    """What the editor shows for a call: the command or the path, else the tool's name."""
    if isinstance(arguments, dict):
        for key in ("command", "path", "pattern", "url", "name"):
            if isinstance(value := arguments.get(key), str) and value:
                return f"{name}: {value}"[:200]
    return name


def locations(arguments: Any) -> list[ToolCallLocation] | None:
    if isinstance(arguments, dict) and isinstance(path := arguments.get("path"), str) and os.path.isabs(path):
        line = arguments.get("offset")
        return [ToolCallLocation(path=path, line=line if isinstance(line, int) and line >= 0 else None)]
    return None


def text_of(item: dict[str, Any]) -> str:
    return "".join(p.get("text") or "" for p in item.get("content") or [] if p.get("type") == "text")


def _read_current(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_DIFF_FILE_BYTES:
            return None
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def diff_contents(changes: Any) -> list[FileEditToolCallContent]:
    contents: list[FileEditToolCallContent] = []
    for change in changes if isinstance(changes, list) else []:
        if not isinstance(change, dict) or not isinstance(path := change.get("path"), str):
            continue
        both = diffs.texts(change, _read_current(path) if change.get("kind") != "delete" else None)
        if both is not None:
            contents.append(helpers.tool_diff_content(path, both[1], both[0]))
    return contents


@attrs.define
class Translator:
    """Session events in, ACP updates out. `own_inputs`: user messages this editor sent (ACP clients
    show their own prompt; another editor's comes as user_message_chunk)."""

    own_inputs: set[str] = attrs.Factory(set)
    _streaming: dict[int, dict[str, Any]] = attrs.Factory(dict)  # itemIndex -> item
    _streamed: set[str] = attrs.Factory(set)  # item ids whose text came as deltas
    _calls: dict[str, str] = attrs.Factory(dict)  # callId -> toolCall item id (the ACP toolCallId)
    _started: set[str] = attrs.Factory(set)  # toolCall item ids announced with tool_call

    def event(self, event: dict[str, Any]) -> list[Update]:
        kind = event.get("type")
        if kind == "itemStarted":
            item = event.get("item") or {}
            self._streaming[int(event.get("itemIndex", -1))] = item
            if item.get("type") == "toolCall":
                return self._call_started(item)
            return []
        if kind == "itemDelta":
            item = self._streaming.get(int(event.get("itemIndex", -1))) or {}
            delta = event.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            if item.get("type") == "assistantMessage":
                self._streamed.add(str(item.get("id")))
                return [helpers.update_agent_message_text(delta)]
            if item.get("type") == "reasoning":
                self._streamed.add(str(item.get("id")))
                return [helpers.update_agent_thought_text(delta)]
            return []  # a tool call's arguments: sent whole once complete
        if kind == "itemCompleted":
            return self.item(event.get("item") or {})
        if kind == "turnCompleted":
            self._streaming.clear()  # item indexes count within a turn
            return []
        if kind == "contextUsageUpdated":
            context = event.get("context") or {}
            used, size = context.get("tokens"), context.get("window")
            if isinstance(used, int) and isinstance(size, int) and used >= 0 and size > 0:
                return [UsageUpdate(session_update="usage_update", used=used, size=size)]
        if kind == "error":
            error = event.get("error") or {}
            return [
                helpers.update_agent_message_text(f"\n\n⚠ {error.get('kind', 'error')}: {error.get('message', '')}")
            ]
        return []

    def item(self, item: dict[str, Any]) -> list[Update]:
        """A completed (or, for session/load, logged) item."""
        item_id, kind = str(item.get("id")), item.get("type")
        if kind == "userMessage":
            if item_id in self.own_inputs:
                return []
            return [helpers.update_user_message(block) for block in _blocks(item)]
        if kind in ("assistantMessage", "reasoning"):
            if item_id in self._streamed:
                self._streamed.discard(item_id)
                return []
            text = text_of(item)
            if not text:
                return []
            if kind == "reasoning":
                return [helpers.update_agent_thought_text(text)]
            return [helpers.update_agent_message_text(text)]
        if kind == "toolCall":
            call = item.get("toolCall") or {}
            arguments = _arguments(call.get("arguments"))
            name = str(call.get("name", ""))
            updates = [] if item_id in self._started else self._call_started(item)
            updates.append(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=item_id,
                    title=title(name, arguments),
                    kind=tool_kind(name),
                    status="pending" if item.get("status") == "awaitingApproval" else "in_progress",
                    locations=locations(arguments),
                    raw_input=arguments,
                )
            )
            return updates
        if kind == "toolResult":
            result = item.get("toolResult") or {}
            call_id = self._calls.pop(str(result.get("callId")), str(result.get("callId")))
            self._started.discard(call_id)  # kept only while a call waits for its result
            content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = []
            if text := text_of(item):
                content.append(helpers.tool_content(helpers.text_block(text)))
            content.extend(diff_contents(result.get("fileChanges")))
            return [
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="failed" if result.get("isError") else "completed",
                    content=content or None,
                    raw_output=text or None,
                )
            ]
        return []

    def _call_started(self, item: dict[str, Any]) -> list[Update]:
        call = item.get("toolCall") or {}
        item_id, name = str(item.get("id")), str(call.get("name", ""))
        self._calls[str(call.get("callId"))] = item_id
        self._started.add(item_id)
        return [
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=item_id,
                title=name or "tool",
                kind=tool_kind(name),
                status="pending",
            )
        ]


def _blocks(item: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = []
    for part in item.get("content") or []:
        if part.get("type") == "text" and part.get("text"):
            blocks.append(helpers.text_block(part["text"]))
        elif part.get("type") == "image" and isinstance(part.get("data"), str):
            blocks.append(helpers.image_block(part["data"], str(part.get("mimeType", "image/png"))))
    return blocks
