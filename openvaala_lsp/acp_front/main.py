"""`openvaala-lsp --acp` (and `openvaala acp`): ACP v1 on stdin/stdout, the runtime behind it the user's
host (or, with `--standalone`, this process's own)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import cast

from acp import Agent
from acp.agent.connection import AgentSideConnection

from openvaala_lsp.acp_front.agent import OpenvaalaAgent
from openvaala_lsp.acp_front.transport import NdjsonWire
from openvaala_lsp.wire import framing


async def open_stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams over fds 0 and 1, the reader's limit the message limit; fd 1 then points at stderr, so
    nothing but the protocol can reach the editor."""
    loop = asyncio.get_running_loop()
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    stdout = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=framing.max_message_bytes())
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, standalone: bool = False
) -> OpenvaalaAgent:
    """Serves one ACP editor until it leaves (also what the in-process tests run)."""
    agent = OpenvaalaAgent(standalone=standalone)
    # the SDK's router looks each method up by name: those the agent leaves out (fork, resume, close,
    # extensions) are answered methodNotFound, so it need not be the whole `acp.Agent` protocol
    connection = AgentSideConnection(cast(Agent, agent), NdjsonWire(reader, writer), listening=False)
    try:
        await connection.listen()
    finally:
        await agent.close()
        with contextlib.suppress(Exception):
            await connection.close()
    return agent


async def run(standalone: bool) -> int:
    reader, writer = await open_stdio()
    serving = asyncio.get_running_loop().create_task(serve(reader, writer, standalone=standalone))
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    return 0


def main(standalone: bool = False) -> int:
    try:
        return asyncio.run(run(standalone))
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stderr.flush()
