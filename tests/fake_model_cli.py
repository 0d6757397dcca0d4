"""The scripted fake model server as a process, for tests written in other languages (the VS Code
extension's Node tests, the Neovim plugin's Lua tests): `python tests/fake_model_cli.py`.

It starts `FakeProviderServer` on 127.0.0.1 and prints one JSON line: `{"url": ..., "baseUrl": ...}`
(`baseUrl` is the openai-chat one: put it in a model definition with `api = "openai-chat"`). Then it
reads commands from stdin, one JSON object per line, and answers each with one JSON line:

    {"enqueue": [STEP, ...]}       queue one streamed openai-chat response  -> {"ok": true}
    {"default": [STEP, ...]}       served whenever the queue is empty       -> {"ok": true}
    {"requests": true}             what the runtime sent                    -> {"requests": [{path, json}, ...]}

A STEP is `["text", "Hel", "lo"]`, `["reasoning", "..."]`, `["deltas", 200, "x"]`,
`["tool_call", "call_1", "shell", ["{\\"command\\":", " \\"ls\\"}"]]`, `["pause", 0.2]` or
`["finish"]` / `["finish", {"prompt_tokens": 10, "completion_tokens": 5}]` (usage); a response
without `finish` is finished for you. EOF on stdin stops the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fake_provider import ChatStream, FakeProviderServer, ScriptedResponse

API = "openai-chat"


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def response(steps: list[list[Any]]) -> ScriptedResponse:
    stream = ChatStream()
    finished = False
    for step in steps:
        name, args = step[0], step[1:]
        if name == "text":
            stream.text(*args)
        elif name == "reasoning":
            stream.reasoning(*args)
        elif name == "deltas":
            stream.deltas(int(args[0]), *(args[1:2] or ["x"]))
        elif name == "tool_call":
            call_id, tool, fragments = args
            stream.tool_call(call_id, tool, list(fragments))
        elif name == "pause":
            stream.pause(float(args[0]))
        elif name == "finish":
            stream.finish(usage=args[0] if args else None)
            finished = True
        else:
            raise ValueError(f"unknown step {name!r}")
    if not finished:
        stream.finish()
    return stream.response()


def main() -> int:
    with FakeProviderServer.start_in_thread() as server:
        say({"url": server.url, "baseUrl": server.base_url(API)})
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                command = json.loads(line)
                if "enqueue" in command:
                    server.enqueue(API, response(command["enqueue"]))
                    answer: dict[str, Any] = {"ok": True}
                elif "default" in command:
                    server.set_default(API, response(command["default"]))
                    answer = {"ok": True}
                elif "requests" in command:
                    answer = {"requests": [{"path": r.path, "json": r.json} for r in server.requests]}
                else:
                    answer = {"error": f"unknown command: {line.strip()[:200]}"}
            except Exception as exc:  # a bad command is the test's bug: say so, keep serving
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            say(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
