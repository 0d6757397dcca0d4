"""openvaala as a plain LSP editor meets it (no plugin of ours): the real openvaala-lsp, LSP's own
messages only, the model configured in the user's config file. Open documents reach the agent's file
tools unsaved; code actions and `openvaala.ask` start turns; a turn is work-done progress, its end a
message; a call that asks first is a `window/showMessageRequest`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient, ResponseError
from turn_helpers import API_KEY, write_user_config

SOURCE = "def add(a, b):\n    return a - b\n"
UNSAVED = "def add(a, b):\n    return a - b  # checked by hand\n"
CAPABILITIES = {"window": {"workDoneProgress": True, "showDocument": {"support": True}}}


@pytest.fixture
async def editor(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    write_user_config(home, provider)
    provider.set_default("openai-chat", ChatStream().text("A title").finish().response())  # the title call
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    lsp.handlers["window/workDoneProgress/create"] = lambda params: None
    lsp.handlers["window/showDocument"] = lambda params: {"success": True}
    await lsp.initialize([workspace], capabilities=CAPABILITIES, options={"openChangedFiles": True})
    yield lsp
    await lsp.shutdown()


async def open_unsaved(lsp: LspClient, path: Path) -> str:
    """The file opened in the editor, then changed there and not saved."""
    uri = path.as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}
    await lsp.notify("textDocument/didOpen", {"textDocument": document})
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": UNSAVED}]}
    await lsp.notify("textDocument/didChange", change)
    return uri


def call(call_id: str, name: str, **arguments: Any) -> Any:
    return ChatStream().tool_call(call_id, name, [json.dumps(arguments)]).finish().response()


def tool_results(provider: FakeProviderServer) -> list[str]:
    messages = provider.requests_for("openai-chat")[-1].json["messages"]
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


async def requests_of(lsp: LspClient, method: str) -> list[dict[str, Any]]:
    """The params of the server's requests of `method`, once there is one (they follow showMessage)."""
    async with asyncio.timeout(10):
        while not (seen := [r["params"] for r in lsp.requests_seen if r.get("method") == method]):
            await asyncio.sleep(0.02)
    return seen


async def shown_message(lsp: LspClient) -> dict[str, Any]:
    message = await lsp.wait_for(lambda m: m["method"] == "window/showMessage", timeout=30)
    return dict(message["params"])


async def test_a_fix_code_action_runs_a_turn_that_reads_the_unsaved_buffer(
    editor: LspClient, workspace: Path, provider: FakeProviderServer
) -> None:
    source = workspace / "app.py"
    source.write_text(SOURCE)
    uri = await open_unsaved(editor, source)
    line = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 16}}
    diagnostic = {"range": line, "severity": 1, "message": "add subtracts", "source": "review"}
    params = {"textDocument": {"uri": uri}, "range": line, "context": {"diagnostics": [diagnostic]}}
    actions = await editor.request("textDocument/codeAction", params)
    assert [a["title"] for a in actions] == ["Ask openvaala", "Explain with openvaala", "Fix with openvaala"]
    fix = actions[2]
    assert fix["kind"] == "quickfix" and fix["diagnostics"] == [diagnostic]

    provider.enqueue(
        "openai-chat",
        call("c1", "read_file", path="app.py"),
        call("c2", "edit", path="app.py", old_string="a - b", new_string="a + b"),
        ChatStream().text("Fixed: add adds now.").finish().response(),
    )
    started = await editor.request("workspace/executeCommand", fix["command"])
    assert set(started) == {"conversationId", "itemId"}
    message = await shown_message(editor)
    assert message == {"type": 3, "message": "openvaala: Fixed: add adds now."}

    asked = provider.requests_for("openai-chat")[0].json["messages"][-1]["content"]
    assert "Fix these problems in app.py, lines 2-2" in asked and "line 2: error: add subtracts (review)" in asked
    assert "# checked by hand" in asked  # the selection comes from the editor's buffer
    read, edited = tool_results(provider)
    assert read.startswith("[unsaved: the text of app.py as ") and "version 2" in read and "# checked by hand" in read
    assert "holds unsaved changes to app.py" in edited
    assert source.read_text() == "def add(a, b):\n    return a + b\n"  # the edit goes to the disk

    progress = [p["value"] for p in editor.of("$/progress")]
    assert progress[0]["kind"] == "begin" and progress[-1]["kind"] == "end"
    assert any(v["kind"] == "report" and v["message"].startswith("read_file app.py") for v in progress), progress
    [document] = await requests_of(editor, "window/showDocument")
    assert document == {"uri": uri, "takeFocus": False}


async def test_the_ask_command_with_a_prompt_reuses_the_project_conversation(
    editor: LspClient, provider: FakeProviderServer, workspace: Path
) -> None:
    provider.enqueue("openai-chat", ChatStream().text("first").finish().response())
    first = await editor.request("workspace/executeCommand", {"command": "openvaala.ask", "arguments": ["hello"]})
    assert (await shown_message(editor))["message"] == "openvaala: first"
    provider.enqueue("openai-chat", ChatStream().text("second").finish().response())
    second = await editor.request("workspace/executeCommand", {"command": "openvaala.ask", "arguments": ["again"]})
    assert second["conversationId"] == first["conversationId"]
    record = await editor.call("getConversation", {"conversationId": first["conversationId"]})
    assert record["executorSettings"]["directory"] == str(workspace)


async def test_a_call_that_asks_first_is_a_message_request(
    home: Path, editor: LspClient, provider: FakeProviderServer, workspace: Path
) -> None:
    ask_shell = '\n[[agents]]\nname = "default"\npermissions = { default = "allow", tools = { shell = "ask" } }\n'
    (home / "config.toml").write_text((home / "config.toml").read_text() + ask_shell)
    asked: list[dict[str, Any]] = []

    def choose(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"title": "Deny"}

    editor.handlers["window/showMessageRequest"] = choose
    provider.enqueue(
        "openai-chat",
        call("c1", "shell", command="touch made"),
        ChatStream().text("could not").finish().response(),
    )
    await editor.request("workspace/executeCommand", {"command": "openvaala.ask", "arguments": ["make a file"]})
    assert (await shown_message(editor))["message"] == "openvaala: could not"
    [question] = asked
    assert question["message"].startswith("openvaala asks to run shell: touch made")
    assert [a["title"] for a in question["actions"]] == ["Allow once", "Allow for this conversation", "Deny"]
    assert not (workspace / "made").exists()
    assert "denied" in tool_results(provider)[0]


async def test_bad_arguments_name_what_the_command_takes(editor: LspClient) -> None:
    for arguments in ([], [""], [{"action": "dance"}], [42]):
        with pytest.raises(ResponseError) as raised:
            await editor.request("workspace/executeCommand", {"command": "openvaala.ask", "arguments": arguments})
        assert raised.value.kind == "invalidParams" and "openvaala.ask takes" in raised.value.message


async def test_an_editor_without_work_done_progress_is_told_the_steps_in_log_messages(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    write_user_config(home, provider)
    (workspace / "app.py").write_text(SOURCE)
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    try:
        await lsp.initialize([workspace])  # no window.workDoneProgress, as eglot 1.9
        provider.enqueue(
            "openai-chat", call("c1", "read_file", path="app.py"), ChatStream().text("ok").finish().response()
        )
        await lsp.request("workspace/executeCommand", {"command": "openvaala.ask", "arguments": ["look"]})
        await lsp.wait_for(lambda m: m["method"] == "window/showMessage" and m["params"]["type"] == 3, timeout=30)
        assert lsp.of("window/showMessage") == [
            {"type": 4, "message": "openvaala: working"},
            {"type": 4, "message": "openvaala: read_file app.py"},
            {"type": 3, "message": "openvaala: ok"},
        ]
        assert not lsp.of("$/progress") and not [r for r in lsp.requests_seen if "Progress" in r.get("method", "")]
    finally:
        await lsp.shutdown()
