"""The ACP front driven in process by the Python SDK's own client (`acp.ClientSideConnection`): the
agent over a socket pair, a runtime in this process (`--standalone`), the scripted model."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    audio_block,
    connect_to_agent,
    embedded_text_resource,
    image_block,
    resource_block,
    text_block,
)
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation, McpServerStdio
from acp_helpers import RecordingClient, write_config
from fake_provider import ChatStream, FakeProviderServer
from turn_helpers import API_KEY

from openvaala_lsp.acp_front.main import serve


class Editor:
    def __init__(
        self, client: RecordingClient, conn: ClientSideConnection, serving: asyncio.Task[Any], out: asyncio.StreamWriter
    ) -> None:
        self.client = client
        self.conn = conn
        self.serving = serving
        self.out = out

    @classmethod
    async def start(cls) -> Editor:
        agent_side, client_side = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=agent_side, limit=1 << 24)
        serving = asyncio.get_running_loop().create_task(serve(reader, writer, standalone=True))
        client = RecordingClient()
        c_reader, c_writer = await asyncio.open_connection(sock=client_side, limit=1 << 24)
        conn = connect_to_agent(client, c_writer, c_reader)
        return cls(client, conn, serving, c_writer)

    async def close(self) -> None:
        await self.conn.close()
        self.out.close()  # the SDK's close leaves the stream open: the agent sees its editor leave here
        await asyncio.wait_for(self.serving, 20)


@pytest.fixture
async def editor(
    home: Path, workspace: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Editor]:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    monkeypatch.setenv("FAKE_API_KEY", API_KEY)
    monkeypatch.chdir(workspace)
    write_config(home, provider)
    started = await Editor.start()
    yield started
    await started.close()


def write_call(path: Path, content: str) -> Any:
    return ChatStream().tool_call("c1", "write_file", [json.dumps({"path": str(path), "content": content})]).finish()


async def test_the_whole_flow(editor: Editor, workspace: Path, provider: FakeProviderServer, home: Path) -> None:
    conn, client = editor.conn, editor.client
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="pytest", title="Pytest editor", version="1"),
    )
    assert init.protocol_version == 1 and init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.image is True
    assert init.agent_info is not None and init.agent_info.name == "openvaala"

    created = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    sid = created.session_id
    assert created.modes is not None and created.modes.current_mode_id == "default"
    assert [m.id for m in created.modes.available_modes] == ["default", "reviewer"]
    [model] = created.config_options or []
    assert model.id == "model" and model.current_value == "fake/fake-model"
    await client.wait(lambda: client.of("available_commands_update"))
    names = [c["name"] for c in client.of("available_commands_update")[0]["availableCommands"]]
    assert names == ["compact", "fork", "title", "undo"]

    # a streamed prompt whose tool call asks first (allowed) and whose diff arrives
    target = workspace / "a.txt"
    target.write_text("one\ntwo\n")
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .reasoning("let me think")
        .tool_call("c1", "write_file", [json.dumps({"path": str(target), "content": "one\nTWO\n"})])
        .finish()
        .response(),
        ChatStream().text("done ", "now").finish(usage={"prompt_tokens": 10, "completion_tokens": 5}).response(),
    )
    client.answers = ["allowOnce"]
    answer = await conn.prompt(session_id=sid, prompt=[text_block("make two loud")])
    assert answer.stop_reason == "end_turn"
    assert answer.usage is not None and answer.usage.total_tokens > 0
    assert target.read_text() == "one\nTWO\n"
    assert client.text("agent_thought_chunk", sid) == "let me think"
    assert client.text("agent_message_chunk", sid) == "done now"
    [started] = client.of("tool_call", sid)
    assert started["kind"] == "edit" and started["status"] == "pending"
    [asked] = client.permissions
    assert asked["toolCall"]["toolCallId"] == started["toolCallId"]
    finished = [u for u in client.of("tool_call_update", sid) if u.get("status") == "completed"]
    [diff] = [c for c in finished[0]["content"] if c["type"] == "diff"]
    assert diff == {"type": "diff", "path": str(target), "oldText": "one\ntwo\n", "newText": "one\nTWO\n"}
    assert client.of("usage_update", sid)

    # rejected: the file stays, the call fails
    provider.enqueue(
        "openai-chat",
        write_call(target, "gone\n").response(),
        ChatStream().text("ok, not writing").finish().response(),
    )
    client.answers = ["deny"]
    answer = await conn.prompt(session_id=sid, prompt=[text_block("wipe it")])
    assert answer.stop_reason == "end_turn" and target.read_text() == "one\nTWO\n"
    assert len(client.permissions) == 2
    assert client.of("tool_call_update", sid)[-1]["status"] == "failed"

    # cancel mid-stream
    provider.enqueue("openai-chat", ChatStream().text("streaming...").pause(30).finish().response())
    prompting = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("talk long")]))
    await client.wait(lambda: "streaming..." in client.text("agent_message_chunk", sid))
    await conn.cancel(session_id=sid)
    assert (await asyncio.wait_for(prompting, 20)).stop_reason == "cancelled"

    # model switch, and a bad one
    switched = await conn.set_config_option(config_id="model", session_id=sid, value="fake/other-model")
    assert switched is not None and switched.config_options[0].current_value == "fake/other-model"
    with pytest.raises(RequestError) as bad:
        await conn.set_config_option(config_id="model", session_id=sid, value="nope/none")
    assert bad.value.data["kind"] == "invalidParams"

    # a mode is an agent: fixed once the conversation has turns; a fresh session switches
    with pytest.raises(RequestError) as fixed:
        await conn.set_session_mode(mode_id="reviewer", session_id=sid)
    assert fixed.value.data["kind"] == "invalidState"
    fresh = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    await conn.set_session_mode(mode_id="reviewer", session_id=fresh.session_id)
    await client.wait(lambda: client.of("current_mode_update", fresh.session_id))
    provider.enqueue("openai-chat", ChatStream().text("reviewing").finish().response())
    answer = await conn.prompt(session_id=fresh.session_id, prompt=[text_block("review")])
    assert answer.stop_reason == "end_turn"
    assert provider.requests_for("openai-chat")[-1].json["model"] == "fake-model"
    offered = {t["function"]["name"] for t in provider.requests_for("openai-chat")[-1].json.get("tools", [])}
    assert offered == {"read_file"}

    # /title, then load the first session again: the history comes back as updates (a second editor
    # loading it is the Node test's: one process holds one standalone runtime)
    await conn.prompt(session_id=sid, prompt=[text_block("/title loud twos")])
    await client.wait(lambda: "Titled: loud twos" in client.text("agent_message_chunk", sid))
    before = len(client.updates)
    await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    replayed = RecordingClient()
    replayed.updates = client.updates[before:]
    assert replayed.text("user_message_chunk", sid) == "make two loudwipe ittalk long"
    assert replayed.text("agent_thought_chunk", sid) == "let me think"
    assert replayed.text("agent_message_chunk", sid).startswith("done nowok, not writingstreaming...")
    diffs = [c for u in replayed.of("tool_call_update", sid) for c in u.get("content") or [] if c["type"] == "diff"]
    assert diffs[0] == {"type": "diff", "path": str(target), "oldText": "one\ntwo\n", "newText": "one\nTWO\n"}
    listed = await conn.list_sessions(cwd=str(workspace))
    assert "loud twos" in {s.title for s in listed.sessions}


async def test_errors_have_kinds(editor: Editor, workspace: Path) -> None:
    conn = editor.conn
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    with pytest.raises(RequestError) as unknown:
        await conn.prompt(session_id="conv_nope", prompt=[text_block("hi")])
    assert unknown.value.data["kind"] == "conversationNotOpen"
    with pytest.raises(RequestError) as missing:
        await conn.load_session(cwd=str(workspace), session_id="conv_nope", mcp_servers=[])
    assert missing.value.data["kind"] == "conversationNotFound"
    with pytest.raises(RequestError) as relative:
        await conn.new_session(cwd="relative/dir", mcp_servers=[])
    assert relative.value.data["kind"] == "invalidParams"
    with pytest.raises(RequestError) as extra:
        await conn.new_session(cwd=str(workspace), mcp_servers=[], additional_directories=["/no/such/dir"])
    assert extra.value.data["kind"] == "invalidParams" and "$.additionalDirectories[0]" in str(extra.value)


async def test_the_editors_mcp_servers_give_the_agent_their_tools(
    editor: Editor, workspace: Path, provider: FakeProviderServer
) -> None:
    conn, client = editor.conn, editor.client
    init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
    assert init.agent_capabilities.mcp_capabilities.http is True
    echo = McpServerStdio(
        name="editor-echo",
        command=sys.executable,
        args=[str(Path(__file__).parent / "mcp_servers" / "echo_server.py")],
        env=[],
    )
    sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[echo])).session_id
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "mcp__editor-echo__echo", ['{"text": "from the editor"}']).finish().response(),
        ChatStream().text("echoed").finish().response(),
    )
    answer = await conn.prompt(session_id=sid, prompt=[text_block("echo something")])
    assert answer.stop_reason == "end_turn"
    offered = {t["function"]["name"] for t in provider.requests_for("openai-chat")[0].json["tools"]}
    assert "mcp__editor-echo__echo" in offered
    [done] = [u for u in client.of("tool_call_update", sid) if u.get("status") == "completed"]
    assert done["rawOutput"] == "from the editor"


async def test_images_and_embedded_files_reach_the_model(
    editor: Editor, workspace: Path, provider: FakeProviderServer
) -> None:
    conn = editor.conn
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    provider.enqueue("openai-chat", ChatStream().text("seen").finish().response())
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    prompt = [
        text_block("what is in these?"),
        image_block(pixel, "image/png"),
        resource_block(embedded_text_resource("file:///p/notes.md", "# notes\nkeep it short")),
    ]
    assert (await conn.prompt(session_id=sid, prompt=prompt)).stop_reason == "end_turn"
    [user] = [m for m in provider.requests_for("openai-chat")[0].json["messages"] if m["role"] == "user"]
    parts = user["content"]
    assert {"type": "text", "text": "what is in these?"} in parts
    assert any(p["type"] == "image_url" and pixel in p["image_url"]["url"] for p in parts)
    assert any(
        p["type"] == "text" and "file:///p/notes.md" in p["text"] and "keep it short" in p["text"] for p in parts
    )
    with pytest.raises(RequestError) as audio:
        await conn.prompt(session_id=sid, prompt=[audio_block("AAAA", "audio/wav")])
    assert audio.value.data["kind"] == "invalidParams"


async def test_the_commands_undo_fork_and_compact(
    editor: Editor, workspace: Path, provider: FakeProviderServer
) -> None:
    conn, client = editor.conn, editor.client
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    target = workspace / "b.txt"
    target.write_text("kept\n")
    provider.enqueue(
        "openai-chat", write_call(target, "changed\n").response(), ChatStream().text("wrote").finish().response()
    )
    client.answers = ["allowOnce"]
    await conn.prompt(session_id=sid, prompt=[text_block("change it")])
    assert target.read_text() == "changed\n"

    await conn.prompt(session_id=sid, prompt=[text_block("/undo")])
    assert target.read_text() == "kept\n"
    assert "Undid turn" in client.text("agent_message_chunk", sid) and str(target) in client.text(
        "agent_message_chunk", sid
    )

    await conn.prompt(session_id=sid, prompt=[text_block("/fork")])
    said = client.text("agent_message_chunk", sid)
    fork_id = said.split("Forked into conversation ")[1].split(":")[0]
    assert fork_id.startswith("conv_") and fork_id != sid
    await conn.load_session(cwd=str(workspace), session_id=fork_id, mcp_servers=[])
    assert client.text("user_message_chunk", fork_id) == "change it"

    provider.set_default("openai-chat", ChatStream().text("a summary").finish().response())
    await conn.prompt(session_id=sid, prompt=[text_block("/compact")])
    assert "Compacting" in client.text("agent_message_chunk", sid)
