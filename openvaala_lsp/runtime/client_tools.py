"""Tools that live in the editor: set with `setClientMcpServers`, run through the client."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from openvaala_lsp.mcp.model import ClientMCPServer, ClientTool
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.tools.base import STOP_MARGIN, ToolContext, ToolOutput

CLIENT_TOOL_TIMEOUT = 120.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def qualified_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>` (the name models and hooks see), limited to what every provider accepts."""
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:64]


class ClientToolAdapter:
    """One tool of a client MCP server as a runtime tool; each call is a request to that client."""

    def __init__(self, client: Client, conversation_id: str, server: ClientMCPServer, tool: ClientTool) -> None:
        self.client = client
        self.conversation_id = conversation_id
        self.server = server.name
        self.tool = tool.name
        self.name = qualified_name(server.name, tool.name)
        self.description = tool.description or f"{tool.name} (a tool of the editor's {server.name} server)"
        schema = tool.input_schema if tool.input_schema.get("type") == "object" else {}
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}, **schema}

    def time_limit(self, arguments: dict[str, Any]) -> float:
        return CLIENT_TOOL_TIMEOUT + STOP_MARGIN

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        if self.client.call_tool is None:
            return ToolOutput(text="the editor that provides this tool cannot run tools", is_error=True)
        try:
            result = await asyncio.wait_for(
                self.client.call_tool(self.conversation_id, self.server, self.tool, arguments), CLIENT_TOOL_TIMEOUT
            )
        except TimeoutError:
            return ToolOutput(
                text=f"the editor did not answer {self.name} within {CLIENT_TOOL_TIMEOUT:g} s", is_error=True
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolOutput(text=f"the editor failed to run {self.name}: {exc}", is_error=True)
        return ToolOutput(text=_text(result.get("content")), is_error=bool(result.get("isError")))


def _text(content: Any) -> str:
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, dict):
            parts.append(f"[{part.get('type', 'content')} {part.get('mimeType', '')}]".replace(" ]", "]"))
    return "\n".join(parts)
