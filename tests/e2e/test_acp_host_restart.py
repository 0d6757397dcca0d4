"""The ACP front keeps the host's restart: the runtime host is killed under an ACP editor (the Python
SDK's client on a spawned `openvaala-lsp --acp`) with a prompt streaming; the prompt fails with
`runtimeStopped`, a new host is reached at once, and the same session takes the next prompt."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from acp import RequestError, connect_to_agent, text_block
from acp_helpers import RecordingClient, write_config
from fake_provider import ChatStream, FakeProviderServer
from test_host import host_pids
from turn_helpers import API_KEY


async def test_a_killed_host_is_replaced_under_an_acp_editor(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    write_config(home, provider)
    environment = {
        **os.environ,
        "OPENVAALA_HOME": str(home),
        "OPENVAALA_HOST_IDLE_SECONDS": "1",
        "FAKE_API_KEY": API_KEY,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openvaala_lsp", "--acp",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=workspace, env=environment, limit=1 << 24,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    client = RecordingClient()
    conn = connect_to_agent(client, process.stdin, process.stdout)
    try:
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        provider.enqueue("openai-chat", ChatStream().text("streaming...").pause(30).finish().response())
        prompting = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("talk long")]))
        await client.wait(lambda: "streaming..." in client.text("agent_message_chunk", sid))

        [old_host] = host_pids(home)
        os.kill(old_host, signal.SIGKILL)
        with pytest.raises(RequestError) as err:
            await asyncio.wait_for(prompting, 20)
        assert err.value.data["kind"] == "runtimeStopped"

        provider.enqueue("openai-chat", ChatStream().text("back again").finish().response())
        answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("still there?")]), 30)
        assert answer.stop_reason == "end_turn"
        assert client.text("agent_message_chunk", sid).endswith("back again")
        [new_host] = host_pids(home)
        assert new_host != old_host
    finally:
        await conn.close()
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 20)
