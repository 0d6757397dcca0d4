"""The file tools through an ACP editor that offers `fs/read_text_file` and `fs/write_text_file`: the
agent reads the editor's unsaved text and writes through the editor (the runtime's
`openvaala/readTextFile` / `openvaala/writeTextFile` answered by the ACP front), every check of the
runtime still made first; the Python SDK's client in process, a runtime in this process."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    WriteTextFileResponse,
)
from acp_helpers import RecordingClient, write_config
from fake_provider import ChatStream, FakeProviderServer
from turn_helpers import API_KEY

from openvaala_lsp.acp_front.main import serve
from openvaala_lsp.tools import files
from openvaala_lsp.tools.base import EditorFiles, ToolContext


class FsEditor(RecordingClient):
    """An ACP client holding files open: `buffers` (path -> its unsaved text) differ from the disk;
    writes land in `buffers` only, as an editor that has not saved yet. `failing` makes both fail."""

    def __init__(self) -> None:
        super().__init__()
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.failing = False

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if self.failing:
            raise RequestError.internal_error({"why": "the buffer is gone"})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        if Path(path).is_file():
            return ReadTextFileResponse(content=Path(path).read_text())
        raise RequestError.resource_not_found(path)

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        if self.failing:
            raise RequestError.internal_error({"why": "read-only buffer"})
        self.buffers[path] = content
        return WriteTextFileResponse()


class Session:
    def __init__(self, client: FsEditor, conn: ClientSideConnection, serving: asyncio.Task[Any], out: Any) -> None:
        self.client, self.conn, self.serving, self.out = client, conn, serving, out
        self.sid = ""

    async def prompt(self, provider: FakeProviderServer, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """One prompt whose model makes `calls` in turn; the finished tool calls' updates."""
        streams = [
            ChatStream().tool_call(f"c{n}", name, [json.dumps(args)]).finish() for n, (name, args) in enumerate(calls)
        ]
        provider.enqueue("openai-chat", *[s.response() for s in streams], ChatStream().text("ok").finish().response())
        before = len(self.client.of("tool_call_update", self.sid))
        answer = await self.conn.prompt(session_id=self.sid, prompt=[text_block("go")])
        assert answer.stop_reason == "end_turn"
        updates = self.client.of("tool_call_update", self.sid)[before:]
        return [u for u in updates if u.get("status") in ("completed", "failed")]


def texts(update: dict[str, Any]) -> str:
    return "\n".join(c["content"]["text"] for c in update.get("content", []) if c["type"] == "content")


@pytest.fixture
async def session(
    home: Path, workspace: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Session]:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    monkeypatch.setenv("FAKE_API_KEY", API_KEY)
    monkeypatch.chdir(workspace)
    write_config(home, provider)
    agent_side, client_side = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=agent_side, limit=1 << 24)
    serving = asyncio.get_running_loop().create_task(serve(reader, writer, standalone=True))
    client = FsEditor()
    c_reader, c_writer = await asyncio.open_connection(sock=client_side, limit=1 << 24)
    conn = connect_to_agent(client, c_writer, c_reader)
    started = Session(client, conn, serving, c_writer)
    fs = FileSystemCapabilities(read_text_file=True, write_text_file=True)
    await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(fs=fs))
    started.sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    yield started
    await conn.close()
    c_writer.close()
    await asyncio.wait_for(serving, 20)


async def test_read_file_sees_the_editors_unsaved_text(
    session: Session, workspace: Path, provider: FakeProviderServer
) -> None:
    target = workspace / "a.py"
    target.write_text("saved text\n")
    session.client.buffers[str(target)] = "unsaved one\nunsaved two\n"
    [done] = await session.prompt(provider, ("read_file", {"path": str(target)}))
    assert done["status"] == "completed"
    text = texts(done)
    assert "unsaved one" in text and "unsaved two" in text and "saved text" not in text
    assert "[unsaved:" in text and "the file on disk differs" in text
    assert session.client.reads == [str(target)]
    # the same text as on disk: no note
    session.client.buffers[str(target)] = "saved text\n"
    [same] = await session.prompt(provider, ("read_file", {"path": str(target)}))
    assert "[unsaved" not in texts(same) and "saved text" in texts(same)


async def test_write_file_and_edit_go_through_the_editor(
    session: Session, workspace: Path, provider: FakeProviderServer
) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\n")
    session.client.buffers[str(target)] = "x = 2\n"  # unsaved: the edit applies to it
    session.client.answers = ["allowOnce"]  # write_file asks first (the test agent)
    edited, written = await session.prompt(
        provider,
        ("edit", {"path": str(target), "old_string": "x = 2", "new_string": "x = 3"}),
        ("write_file", {"path": str(workspace / "new.py"), "content": "made\n"}),
    )
    assert edited["status"] == "completed" and "written through" in texts(edited)
    assert session.client.buffers[str(target)] == "x = 3\n"
    assert target.read_text() == "x = 1\n"  # the runtime left the disk to the editor
    [diff] = [c for c in edited["content"] if c["type"] == "diff"]
    assert diff["path"] == str(target) and "x = 3" in diff["newText"]
    assert written["status"] == "completed" and "Created" in texts(written)
    assert session.client.writes == [(str(target), "x = 3\n"), (str(workspace / "new.py"), "made\n")]
    assert not (workspace / "new.py").exists()
    assert [c for c in written["content"] if c["type"] == "diff"]


async def test_checks_stay_in_the_runtime(session: Session, workspace: Path, provider: FakeProviderServer) -> None:
    (workspace / ".git").mkdir()
    config = workspace / ".git" / "config"
    config.write_text("[core]\n")
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret\n")
    refused = await session.prompt(
        provider,
        ("read_file", {"path": str(outside)}),
        ("edit", {"path": str(config), "old_string": "[core]", "new_string": "[core]\nfsmonitor = evil"}),
        ("write_file", {"path": str(outside), "content": "gone\n"}),
    )
    assert [u["status"] for u in refused] == ["failed", "failed", "failed"]
    assert session.client.reads == [] and session.client.writes == []
    assert config.read_text() == "[core]\n" and outside.read_text() == "secret\n"


async def test_an_editor_failing_falls_back_to_the_disk_for_reads_and_fails_writes(
    session: Session, workspace: Path, provider: FakeProviderServer
) -> None:
    target = workspace / "a.py"
    target.write_text("on disk\n")
    session.client.failing = True
    session.client.answers = ["allowOnce"]
    read, edited, written = await session.prompt(
        provider,
        ("read_file", {"path": str(target)}),
        ("edit", {"path": str(target), "old_string": "on disk", "new_string": "changed"}),
        ("write_file", {"path": str(target), "content": "gone\n"}),
    )
    assert read["status"] == "completed"
    assert "did not give its text" in texts(read) and "on disk" in texts(read)
    for failed in (edited, written):
        assert failed["status"] == "failed"
        assert "did not write" in texts(failed) and "openvaala did not write it either" in texts(failed)
    assert target.read_text() == "on disk\n"


async def test_an_editor_that_does_not_answer_is_waited_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "EDITOR_TIMEOUT", 0.05)
    target = tmp_path / "a.txt"
    target.write_text("saved\n")

    async def hang(*_: Any) -> Any:
        await asyncio.sleep(60)

    context = ToolContext(
        directory=str(tmp_path),
        roots=[str(tmp_path)],
        environment={},
        editor_files=EditorFiles(editor="Slow editor", read=hang, write=hang),
    )
    read = await files.ReadFileTool().run({"path": str(target)}, context)
    assert not read.is_error and "Slow editor did not give its text" in read.text and "no answer within" in read.text
    assert "saved" in read.text
    written = await files.WriteFileTool().run({"path": str(target), "content": "new\n"}, context)
    assert written.is_error and "Slow editor did not write" in written.text and "no answer within" in written.text
    assert target.read_text() == "saved\n"
