"""`openvaala demo [--directory DIR] [PROMPT]`: drives `openvaala-lsp` over stdio exactly as an editor
does: a real conversation with the embedded local model, streamed, then its token usage read back
with SQL while the editor session is still open.

The embedded model's server starts on first use (seconds, longer on a cold disk), so until its first
word the demo says what it waits for and for how long.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from openvaala_lsp import paths
from openvaala_lsp.cli import sql as sql_cli
from openvaala_lsp.cli.args import plural
from openvaala_lsp.definitions import embedded_model
from openvaala_lsp.protocol.converter import unstructure
from openvaala_lsp.wire.client import LspClient, ResponseError

AGENT = {
    "name": "assistant",
    "description": "answers briefly, without tools",
    "instructions": "You are a helpful assistant. Answer in a few sentences.",
    "tools": [],
}
PROMPT = "In two sentences: why keep an agent's history in SQL?"
USAGE_SQL = (
    "SELECT day, provider, model, calls, input_tokens, output_tokens, estimated_calls"
    " FROM usage_by_model_day ORDER BY day DESC, model LIMIT 10"
)
TICK_SECONDS = 1.0  # on a terminal: the waiting line is rewritten in place
LOG_TICK_SECONDS = 10.0  # into a file or pipe: a line now and then, not one a second


def run(directory: Path, prompt: str) -> int:
    """The demo's exit code; a failure is one line on stderr."""
    try:
        return asyncio.run(demo(directory, prompt))
    except KeyboardInterrupt:
        print("\nopenvaala demo: interrupted", file=sys.stderr)
        return 130
    except ResponseError as exc:
        print(f"\nopenvaala demo: openvaala-lsp refused: {exc.message}", file=sys.stderr)
        return 1
    except (ConnectionError, OSError) as exc:
        print(f"\nopenvaala demo: openvaala-lsp went away ({exc})", file=sys.stderr)
        return 1


async def demo(directory: Path, prompt: str) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openvaala_lsp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None and process.stdin is not None
    peer = LspClient(process.stdout, process.stdin)
    try:
        return await _converse(peer, process, directory, prompt)
    finally:
        if process.returncode is None:  # an error above: the server is not left behind
            process.kill()
            await process.wait()
        await peer.close()


async def _converse(peer: LspClient, process: asyncio.subprocess.Process, directory: Path, prompt: str) -> int:
    folder = {"uri": directory.as_uri(), "name": directory.name}  # directory is absolute
    init = await peer.initialize({"workspaceFolders": [folder]})
    info = init["capabilities"]["experimental"]["openvaala"]
    version, protocol, count = info["serverVersion"], info["protocolVersion"], len(info["methods"])
    print(f"openvaala-lsp {version} speaks protocol {protocol}: {plural(count, 'method')}")
    model = unstructure(embedded_model())
    await peer.request("openvaala/setDefinitions", {"models": [model], "agents": [AGENT]})
    print(f"model: {model['displayName']} (starts on first use)")
    conversation = await peer.request("openvaala/createConversation", {"agentName": "assistant"})
    cid = conversation["id"]
    await peer.request("openvaala/setConversationTitle", {"conversationId": cid, "title": "openvaala demo"})
    session = (await peer.request("openvaala/listSessions", {"conversationId": cid}))["items"][0]
    await peer.request("openvaala/subscribeSession", {"conversationId": cid, "sessionId": session["id"]})
    await peer.request("openvaala/submitInput", {"conversationId": cid, "content": [{"type": "text", "text": prompt}]})
    print(f"\nyou: {prompt}")
    turn = await _stream_turn(peer, Waiting(sys.stderr))
    print()
    print(f"\n{turn_summary(turn)}")
    if turn.get("error"):
        print(f"error: {turn['error']['message']}")
    # while this editor session is open, as `openvaala sql` does: through the runtime host holding the file
    print(f"\nhistory database: {paths.database_path()}; token usage by model and day (openvaala sql):")
    try:
        print(sql_cli.render_table(await sql_cli.fetch(USAGE_SQL)))
        queried = True
    except sql_cli.QueryFailed as exc:
        print(exc, file=sys.stderr)
        queried = False
    await peer.shutdown()
    code = await process.wait()
    return code if turn["status"] == "completed" and queried else 1


def turn_summary(turn: dict[str, Any]) -> str:
    """`turn completed: 12 input tokens and 1 output token`"""
    usage = turn["usage"]
    tokens = f"{plural(usage['inputTokens'], 'input token')} and {plural(usage['outputTokens'], 'output token')}"
    return f"turn {turn['status']}: {tokens}"


class Waiting:
    """`waiting for the model: 12 s` on stderr until the answer's first word: rewritten in place on a
    terminal, a line every ten seconds otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = time.monotonic()
        self.tty = out.isatty()
        self.shown = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._tick())

    def stop(self) -> None:
        if self.task is None:
            return
        self.task.cancel()
        self.task = None
        if self.shown and self.tty:
            self.out.write("\r\033[K")  # the answer starts on a clean line
            self.out.flush()

    async def _tick(self) -> None:
        every = TICK_SECONDS if self.tty else LOG_TICK_SECONDS
        while True:
            await asyncio.sleep(every)
            elapsed = round(time.monotonic() - self.started)
            line = f"waiting for the model (its server starts on first use): {elapsed} s"
            self.out.write(f"\r\033[K{line}" if self.tty else f"{line}\n")
            self.out.flush()
            self.shown = True


async def _stream_turn(peer: LspClient, waiting: Waiting) -> dict[str, Any]:
    streaming: set[str] = set()
    waiting.start()
    answering = False
    try:
        async for message in peer.incoming():
            if message["method"] != "openvaala/sessionEvent":
                continue
            for event in message["params"]["events"]:
                if event["type"] == "itemStarted" and event["item"]["type"] == "assistantMessage":
                    streaming.add(event["item"]["id"])
                elif event["type"] == "itemDelta" and event["itemId"] in streaming:
                    if not answering:
                        waiting.stop()
                        print("assistant: ", end="")
                        answering = True
                    print(event["delta"], end="", flush=True)
                elif event["type"] == "turnCompleted":
                    waiting.stop()
                    if not answering:
                        print("assistant: (no answer)", end="")
                    turn: dict[str, Any] = event["turn"]
                    return turn
    finally:
        waiting.stop()
    raise ConnectionError("openvaala-lsp went away")  # `incoming` ends only by raising
