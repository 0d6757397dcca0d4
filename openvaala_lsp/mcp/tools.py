"""A server's tool as a runtime Tool."""

from __future__ import annotations

import copy
from typing import Any

from openvaala_lsp.mcp.connection import MCPServerConnection
from openvaala_lsp.mcp.model import DEFAULT_TOOL_TIMEOUT, MCPToolSpec
from openvaala_lsp.tools.base import STOP_MARGIN, ToolContext, ToolOutput


def parameters_of(spec: MCPToolSpec) -> dict[str, Any]:
    """The server's input schema if it is an object schema, else one that takes no arguments."""
    schema = spec.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object", "properties": {}, "required": []}
    parameters = copy.deepcopy(schema)
    if not isinstance(parameters.get("properties"), dict):
        parameters["properties"] = {}
    parameters.setdefault("required", [])
    return parameters


class MCPTool:
    """Runs on the server it came from; the conversation's directory and environment were given
    to the server when it started, so `context` is not consulted."""

    def __init__(
        self,
        name: str,
        connection: MCPServerConnection,
        spec: MCPToolSpec,
        *,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.name = name
        self.description = (
            spec.description or spec.title or f"The tool {spec.name!r} of the MCP server {connection.name!r}."
        )
        self.parameters = parameters_of(spec)
        self.server = connection.name
        self.tool = spec.name  # the name the server knows it by
        self.timeout = timeout
        self._connection = connection

    def time_limit(self, arguments: dict[str, Any]) -> float:
        return self.timeout + STOP_MARGIN

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        return await self._connection.call_tool(self.tool, arguments, self.timeout)
