"""How MCP tools are named and described to the model; no servers involved."""

from __future__ import annotations

import re

from openvaala_lsp.mcp.model import MCPToolSpec
from openvaala_lsp.mcp.names import MAX_NAME, tool_name, unique_names
from openvaala_lsp.mcp.tools import parameters_of

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names() -> None:
    assert tool_name("echo", "add") == "mcp__echo__add"
    assert tool_name("my-server", "read_file") == "mcp__my-server__read_file"


def test_names_are_sanitized() -> None:
    name = tool_name("files.local", "read file/ä")
    assert name == "mcp__files_local__read_file__"
    assert VALID.match(name)


def test_long_names_are_shortened_stably() -> None:
    long = tool_name("server", "x" * 100)
    assert len(long) == MAX_NAME and VALID.match(long)
    assert long == tool_name("server", "x" * 100)
    assert long != tool_name("server", "x" * 99)


def test_clashing_names_are_made_unique() -> None:
    names = unique_names([("a", "x.y"), ("a", "x_y"), ("a", "x y"), ("b", "z")])
    assert names[0] == "mcp__a__x_y"
    assert len(set(names)) == 4
    assert names[3] == "mcp__b__z"
    assert all(VALID.match(name) for name in names)


def test_parameters_come_from_the_input_schema() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert parameters_of(MCPToolSpec(name="t", input_schema=schema)) == schema
    loose = parameters_of(MCPToolSpec(name="t", input_schema={"type": "object"}))
    assert loose == {"type": "object", "properties": {}, "required": []}


def test_missing_or_non_object_schemas_take_no_arguments() -> None:
    empty = {"type": "object", "properties": {}, "required": []}
    assert parameters_of(MCPToolSpec(name="t")) == empty
    assert parameters_of(MCPToolSpec(name="t", input_schema={"type": "string"})) == empty
    assert parameters_of(MCPToolSpec(name="t", input_schema={})) == empty
