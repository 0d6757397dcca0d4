"""The agent loop end to end: the real openvaala-lsp process, a real HTTP model server on
127.0.0.1 (scripted), real tools, real DuckDB."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer, insufficient_quota
from lsp_client import LspClient, ResponseError
from processes import alive
from turn_helpers import API_KEY, STANDALONE, USAGE, Session, definitions, start, text_of


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


async def test_a_turn_with_two_tool_rounds(agent: LspClient, provider: FakeProviderServer, workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .text("Let me look.")
        .tool_call("call_1", "read_file", ['{"pa', 'th": "hel', 'lo.txt"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream()
        .tool_call("call_2", "shell", ['{"command": "echo $FAKE_API_KEY | wc -c; pwd"}'])
        .finish(usage=USAGE)
        .response(),
        ChatStream().text("All ", "done.").finish(usage=USAGE).response(),
    )
    session = await Session.open(agent)
    item_id = await session.submit("read hello.txt then run a command")
    turn = await session.turn_completed()
    assert turn["status"] == "completed" and "error" not in turn
    assert turn["usage"]["inputTokens"] == 360 and turn["usage"]["cachedInputTokens"] == 60

    items = await session.items()
    kinds = [item["type"] for item in items]
    assert kinds == [
        "userMessage",
        "assistantMessage",
        "toolCall",
        "toolResult",
        "toolCall",
        "toolResult",
        "assistantMessage",
    ]
    assert items[0]["id"] == item_id and items[0]["status"] == "completed" and items[0]["turnId"] == turn["id"]
    assert items[2]["toolCall"] == {"callId": "call_1", "name": "read_file", "arguments": '{"path": "hello.txt"}'}
    assert "hello from the workspace" in text_of(items[3]) and items[3]["toolResult"]["isError"] is False
    shell_output = text_of(items[5])
    assert str(workspace.resolve()) in shell_output  # ran in the conversation's directory
    assert str(len(API_KEY) + 1) in shell_output  # with the client's environment
    assert text_of(items[6]) == "All done."

    # every completed item was announced with its ordinal, in order, once
    completed = [e for e in session.events() if e["type"] == "itemCompleted"]
    assert [e["ordinal"] for e in completed] == list(range(1, 8))
    assert [e["item"]["id"] for e in completed] == [item["id"] for item in items]
    # deltas rebuild exactly the streamed text
    deltas = "".join(e["delta"] for e in session.events() if e["type"] == "itemDelta" and e["itemId"] == items[6]["id"])
    assert deltas == "All done."

    requests = provider.requests_for("openai-chat")
    assert len(requests) == 3
    assert requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert {tool["function"]["name"] for tool in requests[0].json["tools"]} >= {"shell", "read_file", "edit", "grep"}
    second = requests[1].json["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    assert "hello from the workspace" in second[-1]["content"]

    usage = await agent.call("getSessionContextUsage", {"conversationId": session.id, "sessionId": session.session_id})
    assert usage["window"] == 8000 and usage["thresholdTokens"] == 7200
    assert usage["lastRequest"]["usage"]["totalTokens"] == 150
    assert usage["nextRequest"]["source"] == "estimated"  # the final answer was added since the last call
    assert usage["nextRequest"]["tokens"] > 150
    assert len(usage["items"]) == 7 and usage["toolTokens"] > 0 and usage["systemTokens"] > 0
    context_events = [e for e in session.events() if e["type"] == "contextUsageUpdated"]
    assert context_events[-1]["context"] == {"source": "actual", "tokens": 150, "window": 8000}
    states = [e["state"] for e in session.events() if e["type"] == "stateChanged"]
    assert states == ["running", "idle"]


async def test_steer_reaches_the_next_model_call(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("working").pause(1.0).tool_call("c1", "glob", ['{"pattern": "*"}']).finish().response(),
        ChatStream().text("steered").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    steer_id = await session.submit("also do this", mode="steer")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"
    items = await session.items()
    steered = next(item for item in items if item["id"] == steer_id)
    assert steered["turnId"] == turn["id"]
    second = provider.requests_for("openai-chat")[1].json["messages"]
    assert second[-1] == {"role": "user", "content": "also do this"} or text_of_message(second[-1]) == "also do this"
    removed = [e for e in session.events() if e["type"] == "pendingInputRemoved"]
    assert {"itemId": steer_id, "reason": "taken", "type": "pendingInputRemoved"} in removed
    assert len([e for e in session.events() if e["type"] == "turnStarted"]) == 1


def text_of_message(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


async def test_queue_then_withdraw(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("slow").pause(1.0).text(" answer").finish().response())
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "turnStarted")
    queued = await session.submit("second, queued")
    added = await session.wait_event(lambda e: e["type"] == "pendingInputAdded" and e["item"]["id"] == queued)
    assert added["mode"] == "queue" and added["item"]["status"] == "pending"
    details = await agent.call("getSessionDetails", {"conversationId": session.id, "sessionId": session.session_id})
    assert [p["item"]["id"] for p in details["pendingInputs"]] == [queued]
    withdrawn = await agent.call("withdrawInput", {"conversationId": session.id, "itemId": queued})
    assert [(i["id"], i["status"]) for i in withdrawn["items"]] == [(queued, "withdrawn")]
    with pytest.raises(ResponseError) as err:
        await agent.call("withdrawInput", {"conversationId": session.id, "itemId": queued})
    assert err.value.kind == "notFound"
    turn = await session.turn_completed()
    assert turn["status"] == "completed"
    await asyncio.sleep(0.3)
    assert len(provider.requests_for("openai-chat")) == 1  # the withdrawn input never ran
    assert [item["type"] for item in await session.items()] == ["userMessage", "assistantMessage"]
    assert await agent.call("isIdle") == {"idle": True}


async def test_queued_input_runs_as_the_next_turn(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("one").pause(0.5).finish().response(),
        ChatStream().text("two").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "turnStarted")
    second = await session.submit("second")
    assert (await session.turn_completed(2))["status"] == "completed"
    items = await session.items()
    assert [text_of(i) for i in items] == ["first", "one", "second", "two"]
    assert items[2]["id"] == second


async def test_interrupt_during_streaming(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat", ChatStream().text("partial ", "answer").pause(30).text(" never").finish().response()
    )
    session = await Session.open(agent)
    await session.submit("go")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    await asyncio.sleep(0.1)
    started = await session.wait_event(lambda e: e["type"] == "turnStarted")
    result = await agent.call("interruptTurn", {"conversationId": session.id})
    assert result == {"turnId": started["turn"]["id"]}
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    items = await session.items()
    assert items[-1]["type"] == "assistantMessage" and items[-1]["status"] == "interrupted"
    assert text_of(items[-1]) == "partial answer"
    request = provider.requests_for("openai-chat")[0]
    assert await asyncio.to_thread(request.finished.wait, 10)
    assert request.outcome == "disconnected"  # the connection was closed at once
    with pytest.raises(ResponseError) as err:
        await agent.call("interruptTurn", {"conversationId": session.id})
    assert err.value.kind == "invalidState"


async def test_interrupt_kills_a_running_command(
    agent: LspClient, provider: FakeProviderServer, workspace: Path
) -> None:
    command = "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "shell", [json.dumps({"command": command})]).finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("run it")
    await session.wait_event(lambda e: e["type"] == "itemStarted" and e["item"]["type"] == "toolResult")
    async with asyncio.timeout(10):
        while not (workspace / "child.pid").exists() or not (workspace / "shell.pid").exists():
            await asyncio.sleep(0.02)
    pids = [int((workspace / name).read_text()) for name in ("child.pid", "shell.pid")]
    await agent.call("interruptTurn", {"conversationId": session.id})
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    for pid in pids:
        assert not alive(pid), f"process {pid} survived the interrupt"
    result = (await session.items())[-1]
    assert result["type"] == "toolResult" and result["toolResult"]["isError"] is True
    assert "interrupted" in text_of(result)


async def test_interrupt_with_input(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("long").pause(30).finish().response(),
        ChatStream().text("new direction").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    started = await session.wait_event(lambda e: e["type"] == "turnStarted")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    queued = await session.submit("do this instead")
    await agent.call(
        "interruptTurnWithInput", {"conversationId": session.id, "itemId": queued, "turnId": started["turn"]["id"]}
    )
    assert (await session.turn_completed(1))["status"] == "interrupted"
    assert (await session.turn_completed(2))["status"] == "completed"
    assert [text_of(i) for i in await session.items()] == ["first", "long", "do this instead", "new direction"]


async def test_interrupt_mode_submit(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue(
        "openai-chat",
        ChatStream().text("long").pause(30).finish().response(),
        ChatStream().text("ok").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("first")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    await session.submit("stop and do this", mode="interrupt")
    assert (await session.turn_completed(1))["status"] == "interrupted"
    assert (await session.turn_completed(2))["status"] == "completed"


async def test_provider_failure_fails_the_turn(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", insufficient_quota("openai-chat"))
    session = await Session.open(agent)
    await session.submit("hello")  # acknowledged: the failure is the turn's, not the request's
    turn = await session.turn_completed()
    assert turn["status"] == "failed" and turn["error"]["kind"] == "insufficientQuota"
    error = next(e for e in session.events() if e["type"] == "error")
    assert error["error"]["kind"] == "insufficientQuota"
    assert API_KEY not in json.dumps(session.events())
    assert len(provider.requests_for("openai-chat")) == 1  # never retried


async def test_input_idempotency_and_validation(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    session = await Session.open(agent)
    first = await session.submit("once", inputId="client-key-1")
    again = await session.submit("once", inputId="client-key-1")
    assert first == again
    await session.turn_completed()
    assert await session.submit("once", inputId="client-key-1") == first
    assert len([i for i in await session.items() if i["type"] == "userMessage"]) == 1
    # the same key sent several times at once (an editor retrying) still makes one input
    raced = await asyncio.gather(*(session.submit("twice", inputId="client-key-2") for _ in range(5)))
    assert len(set(raced)) == 1
    await session.turn_completed(2)
    assert len([i for i in await session.items() if i["type"] == "userMessage"]) == 2

    for content, path in (
        ([], "$.content"),
        ([{"type": "text"}], "$.content[0].text"),
        ([{"type": "video", "text": "x"}], "$.content[0].type"),
        ([{"type": "image", "mimeType": "image/png", "data": "!!"}], "$.content[0].data"),
        ([{"type": "image", "mimeType": "image/png", "data": "A" * (8 * 1024 * 1024)}], "$.content[0].data"),
    ):
        with pytest.raises(ResponseError) as err:
            await agent.call("submitInput", {"conversationId": session.id, "content": content})
        assert err.value.kind == "invalidParams" and path in err.value.message, (content, err.value.message)
    with pytest.raises(ResponseError) as err:
        await agent.call("steerInput", {"conversationId": session.id, "itemId": first, "turnId": "turn_x"})
    assert err.value.kind in ("notFound", "invalidState")


async def test_no_model_and_not_open(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, args=STANDALONE)
    await lsp.initialize([workspace])
    try:
        conversation = await lsp.call("createConversation")
        with pytest.raises(ResponseError) as err:
            await lsp.call(
                "submitInput", {"conversationId": conversation["id"], "content": [{"type": "text", "text": "hi"}]}
            )
        assert (err.value.code, err.value.kind) == (-32013, "noModelConfigured")
        assert err.value.message == "no model is configured; run openvaala to set up a model provider"
    finally:
        await lsp.shutdown()
    lsp = await LspClient.spawn(home, cwd=workspace, args=STANDALONE)  # a restarted runtime holds nothing open
    await lsp.initialize([workspace])
    try:
        for method, extra in (
            ("submitInput", {"content": [{"type": "text", "text": "hi"}]}),
            ("interruptTurn", {}),
            ("subscribeSession", {"sessionId": "sess_x"}),
            ("withdrawInput", {"itemId": "item_x"}),
        ):
            with pytest.raises(ResponseError) as err:
                await lsp.call(method, {"conversationId": conversation["id"], **extra})
            assert (err.value.code, err.value.kind) == (-32011, "conversationNotOpen"), method
    finally:
        await lsp.shutdown()


async def test_kill_9_mid_turn_then_restart(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("streaming...").pause(60).finish().response())
    # the runtime is killed: --standalone runs it in the spawned process
    first = await start(home, workspace, provider, STANDALONE)
    session = await Session.open(first)
    asked = await session.submit("question")
    await session.wait_event(lambda e: e["type"] == "itemDelta")
    queued = await session.submit("follow-up")
    os.kill(first.process.pid, signal.SIGKILL)
    await first.close()

    second = await start(home, workspace, provider, STANDALONE)
    try:
        turns = await second.call("listTurns", {"conversationId": session.id})
        assert [t["status"] for t in turns["items"]] == ["interrupted"]
        items = await second.call("listItems", {"conversationId": session.id})
        assert [i["item"]["id"] for i in items["items"]][:1] == [asked]
        reopened = await Session.open(second, session.id)
        assert [p["item"]["id"] for p in reopened.snapshot["pendingInputs"]] == [queued]
        assert reopened.snapshot["lastSavedOrdinal"] == len(items["items"])
        # the queued input runs with the next turn
        provider.set_default("openai-chat", ChatStream().text("answered").finish().response())
        await reopened.submit("and now?")
        assert (await reopened.turn_completed())["status"] == "completed"
        texts = [text_of(i) for i in await reopened.items()]
        assert texts[-3:] == ["follow-up", "and now?", "answered"]
    finally:
        await second.shutdown()


async def test_running_conversations_and_session_updates(agent: LspClient, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", ChatStream().text("a").pause(0.3).finish().response())
    running = await agent.call("subscribeRunningConversations")
    assert running["initial"] == {"conversationIds": []}
    session = await Session.open(agent)
    watched = await agent.call("subscribeConversation", {"conversationId": session.id})
    await session.submit("go")
    await session.turn_completed()
    await agent.wait_for(lambda m: m["method"] == "openvaala/runningConversations" and m["params"]["seq"] == 2)
    updates = agent.of("openvaala/runningConversations", running["subscriptionId"])
    assert [u["conversationIds"] for u in updates] == [[session.id], []]
    infos = [
        n["event"]["info"]
        for n in agent.of("openvaala/conversationEvent", watched["subscriptionId"])
        if n["event"]["type"] == "sessionUpdated"
    ]
    assert "running" in [i["state"] for i in infos] and infos[-1]["state"] == "idle"
    assert infos[-1]["lastTurnStatus"] == "completed"


async def test_client_tools_run_in_the_editor(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY})
    calls: list[dict[str, Any]] = []

    def call_client_tool(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(params)
        return {"content": [{"type": "text", "text": f"open files: {params['arguments']['glob']}"}]}

    lsp.handlers["openvaala/callClientTool"] = call_client_tool
    await lsp.initialize([workspace], options={"clientId": "editor-1"})
    try:
        await lsp.call("setDefinitions", definitions(provider))
        session = await Session.open(lsp)
        tools = [
            {
                "name": "open_files",
                "description": "files open in the editor",
                "inputSchema": {"type": "object", "properties": {"glob": {"type": "string"}}},
            }
        ]
        with pytest.raises(ResponseError) as err:
            await lsp.call(
                "setClientMcpServers",
                {
                    "conversationId": session.id,
                    "clientId": "someone-else",
                    "servers": [{"name": "editor", "tools": tools}],
                },
            )
        assert err.value.kind == "notFound" and "$.clientId" in err.value.message
        await lsp.call(
            "setClientMcpServers",
            {"conversationId": session.id, "clientId": "editor-1", "servers": [{"name": "editor", "tools": tools}]},
        )
        servers = await lsp.call("getMcpServers", {"conversationId": session.id})
        assert servers["servers"] == [
            {
                "name": "editor",
                "transport": "client",
                "status": "ready",
                "tools": ["open_files"],
                "clientId": "editor-1",
            }
        ]
        provider.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", "mcp__editor__open_files", ['{"glob": "*.py"}']).finish().response(),
            ChatStream().text("seen").finish().response(),
        )
        await session.submit("what is open?")
        assert (await session.turn_completed())["status"] == "completed"
        assert calls == [
            {
                "clientId": "editor-1",
                "conversationId": session.id,
                "server": "editor",
                "tool": "open_files",
                "arguments": {"glob": "*.py"},
            }
        ]
        result = next(i for i in await session.items() if i["type"] == "toolResult")
        assert text_of(result) == "open files: *.py" and result["toolResult"]["isError"] is False
        offered = provider.requests_for("openai-chat")[0].json["tools"]
        assert "mcp__editor__open_files" in {tool["function"]["name"] for tool in offered}
    finally:
        await lsp.shutdown()


async def test_catalog_methods(agent: LspClient, provider: FakeProviderServer) -> None:
    agents = await agent.call("listAgents")
    assert agents == {"agents": [{"name": "default", "description": "the built-in coding agent"}]}
    models = await agent.call("listModels", {})
    assert models["agentDefaultModel"] == {"provider": "fake", "name": "fake-model"}
    assert [m["ref"] for m in models["models"]] == [{"provider": "fake", "name": "fake-model"}]
    executors = await agent.call("listExecutors")
    assert [e["id"] for e in executors["executors"]] == ["local"]
    assert await agent.call("getHooks") == {"hooks": []}
    with pytest.raises(ResponseError) as err:
        await agent.call("listModels", {"agentName": "nobody"})
    assert err.value.kind == "notFound"


async def test_hooks_guard_tools_and_shape_the_turn(
    agent: LspClient, provider: FakeProviderServer, workspace: Path
) -> None:
    stop_hook = workspace / "stop_hook.py"
    stop_hook.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "open('stop-events.jsonl', 'a').write(json.dumps(event) + '\\n')\n"
        "if not event['stop_hook_active']:\n"
        "    print('also summarise what you did', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    hooks = [
        {
            "name": "no-shell",
            "event": "preToolUse",
            "matcher": "shell",
            "command": "echo 'shell is not allowed here' >&2; exit 2",
        },
        {"name": "style", "event": "userPromptSubmit", "command": "echo 'Answer in French.'"},
        {"name": "broken", "event": "postToolUse", "matcher": "read_file", "command": "exit 3"},
        {"name": "keep-going", "event": "stop", "command": f"{sys.executable} {stop_hook}"},
    ]
    with pytest.raises(ResponseError) as err:
        await agent.call("setDefinitions", {**definitions(provider), "hooks": [{**hooks[0], "event": "PreToolUse"}]})
    assert err.value.kind == "invalidParams" and "$.hooks[0].event" in err.value.message
    await agent.call("setDefinitions", {**definitions(provider), "hooks": hooks})
    assert [h["name"] for h in (await agent.call("getHooks"))["hooks"]] == [h["name"] for h in hooks]

    (workspace / "a.txt").write_text("A\n")
    provider.enqueue(
        "openai-chat",
        ChatStream()
        .parallel_tool_calls(
            [("c1", "shell", ['{"command": "touch ran"}']), ("c2", "read_file", ['{"path": "a.txt"}'])]
        )
        .finish()
        .response(),
        ChatStream().text("Fini.").finish().response(),
        ChatStream().text("Résumé: rien.").finish().response(),
    )
    session = await Session.open(agent)
    await session.submit("do it")
    turn = await session.turn_completed()
    assert turn["status"] == "completed"
    assert not (workspace / "ran").exists()  # the blocked command never ran
    items = await session.items()
    results = [i for i in items if i["type"] == "toolResult"]
    assert results[0]["toolResult"]["isError"] is True and "shell is not allowed here" in text_of(results[0])
    assert results[1]["toolResult"]["isError"] is False and "A" in text_of(results[1])
    requests = provider.requests_for("openai-chat")
    assert len(requests) == 3
    assert "Answer in French." in requests[0].json["messages"][0]["content"]  # the prompt hook's context
    fed_back = [m for m in requests[1].json["messages"] if m["role"] == "tool"]
    assert "shell is not allowed here" in fed_back[0]["content"]
    # the stop hook kept the agent going once, with its reason as the next message
    hook_message = next(i for i in items if i.get("from", {}).get("kind") == "hook")
    assert text_of(hook_message) == "also summarise what you did"
    assert text_of(items[-1]) == "Résumé: rien."
    stops = [json.loads(line) for line in (workspace / "stop-events.jsonl").read_text().splitlines()]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert stops[0]["hook_event_name"] == "stop" and stops[0]["conversation_id"] == session.id
    assert stops[0]["last_assistant_message"] == "Fini."
    failures = [e["error"] for e in session.events() if e["type"] == "error"]
    assert [f["kind"] for f in failures] == ["hookFailed"] and "broken" in failures[0]["message"]


async def test_a_blocked_prompt_never_reaches_the_model(agent: LspClient, provider: FakeProviderServer) -> None:
    hook = {
        "name": "no-secrets",
        "event": "userPromptSubmit",
        "command": "grep -q password && { echo 'do not paste passwords' >&2; exit 2; }; exit 0",
    }
    await agent.call("setDefinitions", {**definitions(provider), "hooks": [hook]})
    provider.set_default("openai-chat", ChatStream().text("ok").finish().response())
    session = await Session.open(agent)
    await session.submit("my password is hunter2")
    turn = await session.turn_completed()
    assert turn["status"] == "failed" and turn["error"] == {"kind": "hookBlocked", "message": "do not paste passwords"}
    assert provider.requests_for("openai-chat") == []
    await session.submit("hello")
    assert (await session.turn_completed(2))["status"] == "completed"
    sent = provider.requests_for("openai-chat")[0].json["messages"]
    assert "hunter2" not in json.dumps(sent)
    assert [i["status"] for i in await session.items()][:1] == ["withdrawn"]
