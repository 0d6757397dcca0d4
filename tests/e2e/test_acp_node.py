"""`openvaala-lsp --acp` end to end with the official TypeScript ACP client (ClientSideConnection, run
by node), in front of the user's runtime host: a streamed prompt whose tool call asks first and whose
diff arrives, allowed and rejected, a cancel mid-stream, mode and model switches, a session loaded by a
second ACP editor, and an LSP-framed editor on the same host seeing the same turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp_helpers import write_config
from acp_node_editor import AcpError, NodeEditor
from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient
from turn_helpers import API_KEY, Session, text_of

ENV = {"FAKE_API_KEY": API_KEY}


def write_file_call(path: Path, content: str) -> ChatStream:
    return ChatStream().tool_call("c1", "write_file", [json.dumps({"path": str(path), "content": content})]).finish()


async def test_an_acp_editor_and_an_lsp_editor_on_one_host(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    write_config(home, provider)
    acp = await NodeEditor.start(home, workspace, ENV)
    lsp = await LspClient.spawn(home, cwd=workspace, env=ENV)
    try:
        init = await acp.call(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "node-test", "version": "1"}},
        )
        assert init["protocolVersion"] == 1 and init["agentCapabilities"]["loadSession"] is True
        assert init["agentCapabilities"]["promptCapabilities"] == {
            "image": True,
            "audio": False,
            "embeddedContext": True,
        }
        created = await acp.call("newSession", {"cwd": str(workspace), "mcpServers": []})
        sid = created["sessionId"]
        assert created["modes"]["currentModeId"] == "default"
        assert created["configOptions"][0]["currentValue"] == "fake/fake-model"
        await acp.wait(lambda: acp.of("available_commands_update", sid))

        # the LSP-framed editor opens the same conversation on the same host
        await lsp.initialize([workspace])
        watched = await Session.open(lsp, sid)

        target = workspace / "a.txt"
        target.write_text("one\ntwo\n")
        provider.enqueue(
            "openai-chat",
            ChatStream()
            .reasoning("thinking")
            .tool_call("c1", "write_file", [json.dumps({"path": str(target), "content": "one\nTWO\n"})])
            .finish()
            .response(),
            ChatStream().text("done ", "now").finish().response(),
        )
        await acp.call("answers", ["allowOnce"])
        answer = await acp.call("prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "make two loud"}]})
        assert answer["stopReason"] == "end_turn" and answer["usage"]["totalTokens"] > 0
        assert target.read_text() == "one\nTWO\n"
        assert acp.text("agent_thought_chunk", sid) == "thinking"
        assert acp.text("agent_message_chunk", sid) == "done now"
        [call] = acp.of("tool_call", sid)
        [asked] = acp.permissions
        assert asked["toolCall"]["toolCallId"] == call["toolCallId"]
        assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
        done = [u for u in acp.of("tool_call_update", sid) if u.get("status") == "completed"]
        diff = next(c for c in done[0]["content"] if c["type"] == "diff")
        assert diff == {"type": "diff", "path": str(target), "oldText": "one\ntwo\n", "newText": "one\nTWO\n"}
        # ... and the LSP editor saw that very turn, its answer and who decided the approval
        turn = await watched.turn_completed()
        assert turn["reason"] == "completed"
        resolved = await watched.wait_event(lambda e: e["type"] == "approvalResolved")
        assert resolved["decision"] == "allowOnce" and resolved["by"]["name"] == "node-test"
        assert text_of((await watched.items())[-1]) == "done now"

        # rejected
        provider.enqueue(
            "openai-chat",
            write_file_call(target, "gone\n").response(),
            ChatStream().text("not then").finish().response(),
        )
        await acp.call("answers", ["deny"])
        answer = await acp.call("prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "wipe it"}]})
        assert answer["stopReason"] == "end_turn" and target.read_text() == "one\nTWO\n"
        assert acp.of("tool_call_update", sid)[-1]["status"] == "failed"

        # cancel mid-stream
        provider.enqueue("openai-chat", ChatStream().text("streaming...").pause(30).finish().response())
        prompting = acp.send("prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "talk long"}]})
        await acp.wait(lambda: "streaming..." in acp.text("agent_message_chunk", sid))
        await acp.call("cancel", {"sessionId": sid})
        assert (await prompting)["stopReason"] == "cancelled"
        assert (await watched.turn_completed(3))["reason"] == "userInterrupt"

        # model and mode
        switched = await acp.call(
            "setSessionConfigOption", {"sessionId": sid, "configId": "model", "value": "fake/other-model"}
        )
        assert switched["configOptions"][0]["currentValue"] == "fake/other-model"
        with pytest.raises(AcpError) as bad:
            await acp.call("setSessionConfigOption", {"sessionId": sid, "configId": "model", "value": "no/such"})
        assert bad.value.data["kind"] == "invalidParams"
        with pytest.raises(AcpError) as fixed:
            await acp.call("setSessionMode", {"sessionId": sid, "modeId": "reviewer"})
        assert fixed.value.data["kind"] == "invalidState"
        fresh = (await acp.call("newSession", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
        await acp.call("setSessionMode", {"sessionId": fresh, "modeId": "reviewer"})
        await acp.wait(lambda: acp.of("current_mode_update", fresh))
        provider.enqueue("openai-chat", ChatStream().text("reviewed").finish().response())
        answer = await acp.call("prompt", {"sessionId": fresh, "prompt": [{"type": "text", "text": "review"}]})
        assert answer["stopReason"] == "end_turn"
        offered = {t["function"]["name"] for t in provider.requests_for("openai-chat")[-1].json.get("tools", [])}
        assert offered == {"read_file"}
    finally:
        await acp.close()

    # a second ACP editor loads the first session: its history comes as session/updates
    again = await NodeEditor.start(home, workspace, ENV)
    try:
        await again.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        loaded = await again.call("loadSession", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
        assert loaded["modes"]["currentModeId"] == "default"
        assert again.text("user_message_chunk", sid) == "make two loudwipe ittalk long"
        assert again.text("agent_message_chunk", sid).startswith("done nownot thenstreaming...")
        diffs = [c for u in again.of("tool_call_update", sid) for c in u.get("content") or [] if c["type"] == "diff"]
        assert diffs[0] == {"type": "diff", "path": str(target), "oldText": "one\ntwo\n", "newText": "one\nTWO\n"}
    finally:
        await again.close()
        await lsp.shutdown()
