"""A real MCP server for the client tests, built with the official `mcp` package.

Runs over stdio by default; `--http PORT` serves streamable HTTP on 127.0.0.1:PORT at /mcp.
`--crash` exits before answering anything; `--hang` reads its input and never answers. With
ECHO_SERVER_PID_FILE set it writes its process id there, so tests can check that it was stopped.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then says how long it slept."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@server.tool()
def picture() -> types.CallToolResult:
    """A caption, a tiny image and an embedded text resource."""
    return types.CallToolResult(
        content=[
            types.TextContent(text="a red dot"),
            types.ImageContent(data=base64.b64encode(b"\x89PNG\r\n\x1a\n").decode(), mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="hello")
            ),
        ]
    )


@server.tool()
def close_stderr() -> str:
    """Closes the process's stderr (as some wrappers do), staying alive."""
    os.close(2)
    return "stderr closed"


@server.tool()
def quit() -> str:
    """Exits the process at once, mid-call."""
    os._exit(7)


def _extra(word: str) -> str:
    """Added at run time by register_more."""
    return f"extra {word}"


@server.tool()
async def register_more(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client that the tool list changed."""
    server.add_tool(_extra, name="extra")
    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        await ctx.session.send_tool_list_changed()  # handshake era: a pushed notification
    else:
        await ctx.notify_tools_changed()  # 2026 era: delivered on subscriptions/listen streams
    return "registered extra"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--hang", action="store_true")
    options = parser.parse_args()
    if pid_file := os.environ.get("ECHO_SERVER_PID_FILE"):
        with open(pid_file, "w") as file:
            file.write(str(os.getpid()))
    if options.crash:
        sys.stderr.write("echo_server: refusing to start (--crash)\n")
        sys.exit(3)
    if options.hang:
        while sys.stdin.readline():
            pass
        time.sleep(3600)
    if options.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
