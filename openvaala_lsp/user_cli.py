"""`openvaala`: the user's command line.

- `openvaala demo`: drives `openvaala-lsp` over stdio exactly as an editor does and shows what it
  stored.
- `openvaala sql "SELECT ..."`: queries the history database (conversations, sessions, turns,
  items, model_calls and the usage views).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from openvaala_lsp import __version__, paths


class StdioPeer:
    """A minimal LSP client of the `openvaala-lsp` process (what an editor does)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._next_id = 0

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        await self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        while True:
            message = await self._read()
            if message.get("id") == self._next_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']['message']}")
                return message.get("result")

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await self.process.stdin.drain()

    async def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while (line := await self.process.stdout.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if not length:
            raise RuntimeError("openvaala-lsp exited")
        message: dict[str, Any] = json.loads(await self.process.stdout.readexactly(length))
        return message


async def demo(directory: Path) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openvaala_lsp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    peer = StdioPeer(process)
    folder = {"uri": directory.as_uri(), "name": directory.name}  # directory is absolute
    init = await peer.request(
        "initialize", {"processId": os.getpid(), "capabilities": {}, "workspaceFolders": [folder]}
    )
    await peer.notify("initialized", {})
    info = init["capabilities"]["experimental"]["openvaala"]
    version, protocol, count = info["serverVersion"], info["protocolVersion"], len(info["methods"])
    print(f"openvaala-lsp {version} speaks protocol {protocol}: {count} methods")
    conversation = await peer.request("openvaala/createConversation", {})
    await peer.request(
        "openvaala/setConversationTitle", {"conversationId": conversation["id"], "title": "openvaala demo"}
    )
    print(f"created conversation {conversation['id']} in {conversation['executorSettings']['directory']}")
    page = await peer.request("openvaala/listConversations", {"limit": 5})
    print("latest conversations:")
    for entry in page["items"]:
        c = entry["conversation"]
        print(f"  {c['id']}  {c['createdAt']}  {c['title'] or '(untitled)'}")
    await peer.request("shutdown", None)
    await peer.notify("exit", None)
    code = await process.wait()
    print(f"history database: {paths.database_path()}")
    print('query it with: openvaala sql "SELECT id, title, created_at FROM conversations ORDER BY created_at DESC"')
    return code


def sql(query: str) -> int:
    import duckdb

    path = paths.database_path()
    if not path.exists():
        print(f"no history yet at {path}", file=sys.stderr)
        return 1
    try:
        connection = duckdb.connect(str(path), read_only=True, config={"autoinstall_known_extensions": False})
    except duckdb.IOException as exc:
        print(f"the history database is in use by a running openvaala: {exc}", file=sys.stderr)
        return 1
    try:
        relation = connection.sql(query)
        if relation is not None:  # statements without a result (SET, PRAGMA) return None
            relation.show(max_rows=200, max_width=200)
    except duckdb.Error as exc:
        print(f"query failed: {exc}", file=sys.stderr)
        return 1
    finally:
        connection.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="openvaala", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"openvaala {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="drive openvaala-lsp like an editor does")
    demo_parser.add_argument("--directory", type=Path, default=Path.cwd(), help="the workspace folder (default: cwd)")
    sql_parser = commands.add_parser("sql", help="query the history database")
    sql_parser.add_argument("query")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return asyncio.run(demo(args.directory.resolve()))
    return sql(args.query)


if __name__ == "__main__":
    sys.exit(main())
