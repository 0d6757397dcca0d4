"""A second editor for the Neovim plugin's cases, as a process: `python peer_cli.py`. It is the
tests' Python LspClient (tests/lsp_client.py) on the real `openvaala-lsp` in its default mode (a
front relaying to the user's shared runtime host, found through the same OPENVAALA_HOME as
Neovim's), so a case can check what two editors on one project see of each other.

It prints `{"ready": true}`, then reads commands from stdin, one JSON object per line, and answers
each with one JSON line:

    {"start": {"folder": DIR, "options": {...}}}  spawn and initialize (`options`: its
                                                   initializationOptions.openvaala)
                                                   -> {"result": <initialize result>}
    {"call": "createConversation", "params": {...}} an `openvaala/` request
                                                   -> {"result": ...} or {"error": {code, message, kind}}
    {"wait": TYPE, "match": {...}, "timeout": S}   the next session event of TYPE (in any session
                                                   subscription) whose fields equal `match`, not
                                                   returned before                -> {"event": {...}}
    {"events": true}                               the types of every session event so far
                                                   -> {"events": [...]}

EOF on stdin shuts the server down.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lsp_client import LspClient, ResponseError


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Peer:
    def __init__(self) -> None:
        self.client: LspClient | None = None
        self.taken: set[tuple[int, int]] = set()  # (notification, event) indexes already returned

    def session_events(self) -> list[tuple[tuple[int, int], dict[str, Any]]]:
        assert self.client is not None
        found = []
        for n, message in enumerate(self.client.notifications):
            if message.get("method") == "openvaala/sessionEvent":
                for e, event in enumerate(message["params"].get("events") or []):
                    found.append(((n, e), event))
        return found

    async def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        if "start" in command:
            folder = Path(command["start"]["folder"])
            home = Path(os.environ["OPENVAALA_HOME"])
            self.client = await LspClient.spawn(home, cwd=folder)
            result = await self.client.initialize([folder], options=command["start"].get("options") or {})
            return {"result": result}
        assert self.client is not None, "start first"
        if "call" in command:
            try:
                return {"result": await self.client.call(command["call"], command.get("params") or {})}
            except ResponseError as exc:
                return {"error": {"code": exc.code, "message": exc.message, "kind": exc.kind}}
        if "wait" in command:
            kind, match = command["wait"], command.get("match") or {}

            def ready() -> tuple[tuple[int, int], dict[str, Any]] | None:
                for key, event in self.session_events():
                    if key in self.taken or event.get("type") != kind:
                        continue
                    if all(event.get(name) == value for name, value in match.items()):
                        return key, event
                return None

            async with asyncio.timeout(float(command.get("timeout", 20))):
                while (found := ready()) is None:
                    await asyncio.sleep(0.02)
            self.taken.add(found[0])
            return {"event": found[1]}
        if "events" in command:
            return {"events": [event.get("type") for _, event in self.session_events()]}
        return {"error": {"message": f"unknown command: {json.dumps(command)[:200]}"}}


async def main() -> int:
    peer = Peer()
    say({"ready": True})
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            if not line.strip():
                continue
            try:
                answer = await peer.handle(json.loads(line))
            except Exception as exc:  # the case's bug or a timeout: say so, keep serving
                answer = {"error": {"message": f"{type(exc).__name__}: {exc}"}}
            say(answer)
    finally:
        if peer.client is not None:
            await peer.client.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
