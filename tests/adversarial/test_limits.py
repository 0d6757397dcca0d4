"""Finding 14, smaller limits: a client that declared `approvals: false` could answer `allowAlways`
(the two READMEs disagreed on whether it may), and a 200 kB deny message reached the model whole.
One function per limit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.tools.truncate import DEFAULT_MAX_OUTPUT

ASK_SHELL = {"name": "default", "permissions": {"default": "allow", "tools": {"shell": "ask"}}}


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def editor(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await harness.call("setDefinitions", {**definitions(provider), "agents": [ASK_SHELL]})
    yield harness
    await harness.stop()


def shell(command: str) -> Any:
    return ChatStream().tool_call("c1", "shell", [json.dumps({"command": command})]).finish().response()


async def asked(editor: Harness, provider: FakeProviderServer, command: str) -> tuple[Session, dict[str, Any]]:
    provider.enqueue("openai-chat", shell(command), ChatStream().text("ok").finish().response())
    session = await Session.open(editor)
    await session.submit("go")
    return session, await session.wait_event(lambda e: e["type"] == "approvalRequested")


async def test_approvals_a_client_that_declared_none_cannot_answer(
    editor: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    session, request = await asked(editor, provider, "touch made")
    watcher = editor.connect(approvals=False, name="viewer")
    answer = {"conversationId": session.id, "itemId": request["itemId"], "decision": "allowAlways"}
    with pytest.raises(ResponseError) as refused:
        await watcher.call("answerApproval", answer)
    assert refused.value.kind == "invalidState" and "approvals" in refused.value.message
    assert (await editor.call("getConversation", {"conversationId": session.id})).get("alwaysAllowed") in (None, [])
    await editor.call("answerApproval", answer | {"decision": "deny"})  # the question is still open
    await session.turn_completed()
    assert not (workspace / "made").exists()


async def test_deny_message_reaches_the_model_cut_like_tool_output(
    editor: Harness, provider: FakeProviderServer
) -> None:
    session, request = await asked(editor, provider, "rm -rf build")
    message = "no. " + "x" * 200_000 + " THE END"
    answer = {"conversationId": session.id, "itemId": request["itemId"], "decision": "deny", "message": message}
    await editor.call("answerApproval", answer)
    await session.turn_completed()
    [result] = [text_of(item) for item in await session.items() if item["type"] == "toolResult"]
    assert result.startswith("the user denied this call") and "no. xxx" in result and result.endswith(" THE END")
    assert len(result.encode()) <= DEFAULT_MAX_OUTPUT + 200 and "omitted ...]" in result
    sent = [m for r in provider.requests_for("openai-chat") for m in r.json["messages"] if m["role"] == "tool"]
    assert [message["content"] for message in sent] == [result]
