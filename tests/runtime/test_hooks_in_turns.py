"""Hooks in the agent loop: preToolUse blocks a tool, userPromptSubmit adds context or blocks a
prompt, a failing postToolUse hook is reported, a stop hook keeps the agent going."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import Session, definitions, text_of


async def test_hooks_guard_tools_and_shape_the_turn(
    agent: Harness, provider: FakeProviderServer, workspace: Path
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


async def test_a_blocked_prompt_never_reaches_the_model(agent: Harness, provider: FakeProviderServer) -> None:
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
