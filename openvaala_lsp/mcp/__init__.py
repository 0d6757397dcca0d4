"""MCP servers as tool sources: one `MCPServerConnection` per configured server, an `MCPManager`
per conversation. The official `mcp` package (an optional extra) is imported only inside a
connection's background task, so a runtime with no MCP server configured never loads it.

Import from the modules: the package loads none of them, so the protocol's types (`model`) come
without the connections."""
