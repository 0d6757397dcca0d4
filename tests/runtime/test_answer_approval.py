"""Permissions and approvals in a turn: every way a tool call is decided (allow, deny, ask answered
allowOnce, allowAlways or deny, nobody able to answer, an interrupt, a race between two editors, a
hook that asks), what the model reads when a call does not run, and what every subscriber sees."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.storage.duckdb_store import DuckDBStorage
from openvaala_lsp.tools import sandbox


def shell_call(command: str, call_id: str = "c1", **extra: Any) -> str:
    return ChatStream().tool_call(call_id, "shell", [json.dumps({"command": command, **extra})]).finish().response()


def done() -> Any:
    return ChatStream().text("done").finish().response()


def with_agent(provider: FakeProviderServer, **agent: Any) -> dict[str, Any]:
    return definitions(provider) | {"agents": [{"name": "default", **agent}]}


ASK_SHELL = {"permissions": {"default": "allow", "tools": {"shell": "ask"}}}


@pytest.fixture
async def asker(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    """An editor that declared `approvals`, with shell calls set to ask."""
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await harness.call("setDefinitions", with_agent(provider, **ASK_SHELL))
    yield harness
    await harness.stop()


def results(items: list[dict[str, Any]]) -> list[str]:
    return [text_of(item) for item in items if item["type"] == "toolResult"]


async def requested(session: Session) -> dict[str, Any]:
    return await session.wait_event(lambda e: e["type"] == "approvalRequested")


async def test_default_shell_runs_inside_the_sandbox_without_asking(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    provider.enqueue("openai-chat", shell_call("echo hi > made.txt; cat made.txt"), done())
    session = await Session.open(agent)
    await session.submit("go")
    assert (await session.turn_completed())["status"] == "completed"
    assert (workspace / "made.txt").read_text() == "hi\n"
    assert not [e for e in session.events() if e["type"].startswith("approval")]
    assert results(await session.items()) == ["hi\n[exit code 0]"]


async def test_a_deny_rule_refuses_and_the_model_reads_why(
    agent: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    await agent.call("setDefinitions", with_agent(provider, permissions={"tools": {"sh*": "deny"}}))
    provider.enqueue("openai-chat", shell_call("touch never.txt"), done())
    session = await Session.open(agent)
    await session.submit("go")
    assert (await session.turn_completed())["status"] == "completed"
    assert not (workspace / "never.txt").exists()
    (refusal,) = results(await session.items())
    assert refusal.startswith("not allowed (the agent's rule for shell: deny)")
    sent = provider.requests_for("openai-chat")[1].json["messages"][-1]
    assert sent["role"] == "tool" and "not allowed" in sent["content"]  # the model reads it


async def test_ask_then_allow_once(asker: Harness, provider: FakeProviderServer, workspace: Path) -> None:
    other = asker.connect(approvals=True, name="nvim")
    provider.enqueue("openai-chat", shell_call("touch once.txt"), done())
    session = await Session.open(asker)
    watcher = await Session.open(other, session.id)
    await session.submit("go")
    asked = await requested(session)
    assert asked["approval"] == {
        "tool": "shell",
        "arguments": {"command": "touch once.txt"},
        "reason": "the agent's rule for shell: ask",
        "command": "touch once.txt",
    }
    assert (await requested(watcher))["itemId"] == asked["itemId"]  # every subscriber is asked
    assert not (workspace / "once.txt").exists()
    # a client subscribing meanwhile sees the call waiting in its snapshot
    late = await other.call("subscribeSession", {"conversationId": session.id, "sessionId": session.session_id})
    waiting = [s["item"] for s in late["streamingItems"] if s["item"]["id"] == asked["itemId"]]
    assert waiting[0]["status"] == "awaitingApproval" and waiting[0]["type"] == "toolCall"
    assert late["pendingApprovals"] == [
        {"itemId": asked["itemId"], "sessionId": session.session_id, "approval": asked["approval"]}
    ]

    await other.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
    )
    assert (await session.turn_completed())["status"] == "completed"
    assert (workspace / "once.txt").exists()
    resolved = await session.wait_event(lambda e: e["type"] == "approvalResolved")
    assert resolved == {
        "type": "approvalResolved",
        "itemId": asked["itemId"],
        "sessionId": session.session_id,
        "decision": "allowOnce",
        "by": {"kind": "client", "name": "nvim", "clientId": other.client.client_id},
    }
    assert (await watcher.wait_event(lambda e: e["type"] == "approvalResolved")) == resolved
    call = next(i for i in await session.items() if i["id"] == asked["itemId"])
    assert call["status"] == "completed"
    # allowOnce is once: the same command asks again
    provider.enqueue("openai-chat", shell_call("touch once.txt"), done())
    await session.submit("again")
    again = await session.wait_event(lambda e: e["type"] == "approvalRequested" and e["itemId"] != asked["itemId"])
    await asker.call("answerApproval", {"conversationId": session.id, "itemId": again["itemId"], "decision": "deny"})
    await session.turn_completed(2)


async def test_ask_then_deny_with_a_message(asker: Harness, provider: FakeProviderServer, workspace: Path) -> None:
    provider.enqueue("openai-chat", shell_call("rm -rf build"), done())
    (workspace / "build").mkdir()
    session = await Session.open(asker)
    await session.submit("clean")
    asked = await requested(session)
    answer = {"conversationId": session.id, "itemId": asked["itemId"], "decision": "deny", "message": "keep build/"}
    await asker.call("answerApproval", answer)
    assert (await session.turn_completed())["status"] == "completed"
    assert (workspace / "build").is_dir()
    assert results(await session.items()) == [
        "the user denied this call (the agent's rule for shell: ask): keep build/"
    ]
    with pytest.raises(ResponseError) as again:  # the first answer won
        await asker.call("answerApproval", answer | {"decision": "allowOnce"})
    assert again.value.kind == "invalidState"


async def test_allow_always_remembers_the_command_prefix_across_a_restart(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    database = str(home / "openvaala.duckdb")
    first = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await first.call("setDefinitions", with_agent(provider, **ASK_SHELL))
    provider.enqueue("openai-chat", shell_call("git status -s"), done())
    session = await Session.open(first)
    await first.call("subscribeConversation", {"conversationId": session.id})
    await session.submit("status")
    asked = await requested(session)
    await first.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowAlways"}
    )
    await session.turn_completed()
    conversation = await first.call("getConversation", {"conversationId": session.id})
    assert conversation["alwaysAllowed"] == [{"tool": "shell", "commandPrefix": "git status", "outsideSandbox": False}]
    updates = [
        n["event"] for n in first.of("openvaala/conversationEvent") if n["event"]["type"] == "conversationUpdated"
    ]
    assert updates[-1]["conversation"]["alwaysAllowed"] == conversation["alwaysAllowed"]
    await first.stop()

    second = await Harness.start(
        home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True, storage=await DuckDBStorage.open(database)
    )
    try:
        await second.call("setDefinitions", with_agent(provider, **ASK_SHELL))
        provider.enqueue(
            "openai-chat",
            shell_call("git status --short", "c2"),
            shell_call("git status && touch chained.txt", "c3"),
            done(),
        )
        resumed = await Session.open(second, session.id)
        await resumed.submit("again")
        chained = await requested(resumed)  # the remembered prefix covered the first, not the chained one
        assert chained["approval"]["command"] == "git status && touch chained.txt"
        await second.call(
            "answerApproval", {"conversationId": session.id, "itemId": chained["itemId"], "decision": "deny"}
        )
        await resumed.turn_completed()
        outputs = results(await resumed.items())
        assert outputs[-2] == outputs[0]  # `git status --short` ran, unasked, as `git status -s` did
        assert outputs[-1].startswith("the user denied this call")
        asked_events = [e for e in resumed.events() if e["type"] == "approvalRequested"]
        assert len(asked_events) == 1
        # a fork goes on with what the user allowed
        fork = await second.call("forkConversation", {"conversationId": session.id})
        assert fork["alwaysAllowed"] == conversation["alwaysAllowed"]
    finally:
        await second.stop()


async def test_nobody_able_to_answer_refuses_at_once(agent: Harness, provider: FakeProviderServer) -> None:
    await agent.call("setDefinitions", with_agent(provider, **ASK_SHELL))  # this editor did not declare approvals
    provider.enqueue("openai-chat", shell_call("touch x"), done())
    session = await Session.open(agent)
    await session.submit("go")
    assert (await session.turn_completed())["status"] == "completed"
    (refusal,) = results(await session.items())
    assert refusal.startswith("not run: it needs the user's approval (the agent's rule for shell: ask), but no editor")
    assert not [e for e in session.events() if e["type"].startswith("approval")]


async def test_the_last_able_editor_leaving_refuses_what_waits(asker: Harness, provider: FakeProviderServer) -> None:
    watcher = asker.connect()  # cannot answer
    provider.enqueue("openai-chat", shell_call("touch x"), done())
    session = await Session.open(asker)
    seen = await Session.open(watcher, session.id)
    await session.submit("go")
    asked = await requested(session)
    asker.disconnect()
    resolved = await seen.wait_event(lambda e: e["type"] == "approvalResolved")
    assert resolved["decision"] == "deny" and resolved["by"] == {"kind": "session", "sessionId": session.session_id}
    assert resolved["itemId"] == asked["itemId"]
    await seen.turn_completed()
    assert results(await seen.items())[0].endswith("every editor that could answer left before the user answered")


async def test_interrupt_cancels_a_pending_approval(asker: Harness, provider: FakeProviderServer) -> None:
    provider.enqueue("openai-chat", shell_call("touch x"))
    session = await Session.open(asker)
    await session.submit("go")
    asked = await requested(session)
    await asker.call("interruptTurn", {"conversationId": session.id})
    turn = await session.turn_completed()
    assert turn["status"] == "interrupted"
    resolved = await session.wait_event(lambda e: e["type"] == "approvalResolved")
    assert resolved["decision"] == "deny" and resolved["by"] == {"kind": "user"}
    call = next(i for i in await session.items() if i["id"] == asked["itemId"])
    assert call["status"] == "interrupted"
    with pytest.raises(ResponseError) as late:
        await asker.call(
            "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
        )
    assert late.value.kind == "invalidState"


async def test_two_editors_answering_at_once_one_wins(
    asker: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    other = asker.connect(approvals=True)
    provider.enqueue("openai-chat", shell_call("touch raced.txt"), done())
    session = await Session.open(asker)
    await Session.open(other, session.id)
    await session.submit("go")
    asked = await requested(session)
    answer = {"conversationId": session.id, "itemId": asked["itemId"]}
    outcomes = await asyncio.gather(
        asker.call("answerApproval", answer | {"decision": "deny"}),
        other.call("answerApproval", answer | {"decision": "allowOnce"}),
        return_exceptions=True,
    )
    errors = [o for o in outcomes if isinstance(o, ResponseError)]
    assert len(errors) == 1 and errors[0].kind == "invalidState"
    await session.turn_completed()
    resolved = [e for e in session.events() if e["type"] == "approvalResolved"]
    assert len(resolved) == 1
    winner = asker if outcomes[0] == {} else other
    assert resolved[0]["by"]["clientId"] == winner.client.client_id
    assert (workspace / "raced.txt").exists() == (resolved[0]["decision"] == "allowOnce")


async def test_answers_to_nothing_are_not_found(asker: Harness) -> None:
    session = await Session.open(asker)
    with pytest.raises(ResponseError) as unknown:
        await asker.call("answerApproval", {"conversationId": session.id, "itemId": "item_nope", "decision": "deny"})
    assert unknown.value.kind == "notFound"
    with pytest.raises(ResponseError) as bad:
        await asker.call("answerApproval", {"conversationId": session.id, "itemId": "x", "decision": "maybe"})
    assert bad.value.kind == "invalidParams" and "decision" in bad.value.message


async def test_a_hook_that_asks_asks(home: Path, workspace: Path, provider: FakeProviderServer, asker: Harness) -> None:
    script = workspace / "ask.sh"
    output = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "reads secrets"}}
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(output)}\nEOF\n")
    script.chmod(0o755)
    hook = {"name": "careful", "event": "preToolUse", "matcher": "read_file", "command": str(script)}
    await asker.call("setDefinitions", with_agent(provider, **ASK_SHELL) | {"hooks": [hook]})
    (workspace / "notes.txt").write_text("secret\n")
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "read_file", [json.dumps({"path": "notes.txt"})]).finish().response(),
        done(),
    )
    session = await Session.open(asker)
    await session.submit("read")
    asked = await requested(session)
    assert asked["approval"]["reason"] == "reads secrets" and asked["approval"]["paths"] == ["notes.txt"]
    await asker.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
    )
    await session.turn_completed()
    assert "secret" in results(await session.items())[0]


async def test_leaving_the_sandbox_asks(asker: Harness, provider: FakeProviderServer) -> None:
    await asker.call("setDefinitions", with_agent(provider))  # the defaults
    provider.enqueue(
        "openai-chat", shell_call("echo out", outside_sandbox=True, justification="needs the network"), done()
    )
    session = await Session.open(asker)
    await session.submit("go")
    asked = await requested(session)
    assert asked["approval"]["reason"] == "runs outside the sandbox: needs the network"
    await asker.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
    )
    await session.turn_completed()
    assert results(await session.items()) == ["out\n[exit code 0]"]


async def test_a_sandbox_that_cannot_start_asks_and_says_so(
    asker: Harness, provider: FakeProviderServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = workspace / "bwrap"
    broken.write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("OPENVAALA_BWRAP", str(broken))
    sandbox.forget()
    try:
        await asker.call("setDefinitions", with_agent(provider))
        provider.enqueue("openai-chat", shell_call("echo unsandboxed"), done())
        session = await Session.open(asker)
        await session.submit("go")
        asked = await requested(session)
        assert "the sandbox cannot start here" in asked["approval"]["reason"]
        assert "No permissions to create new namespace" in asked["approval"]["reason"]
        answer = {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
        await asker.call("answerApproval", answer)
        await session.turn_completed()
        (output,) = results(await session.items())
        assert output.startswith("[ran without the sandbox, which cannot start here:")
        assert output.endswith("unsandboxed\n[exit code 0]")
    finally:
        sandbox.forget()


async def test_a_sub_agents_approval_reaches_the_editor_watching_its_parent(
    asker: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    """A sub-agent asks within milliseconds of starting, before any editor could subscribe to its
    session: the question goes to the subscribers of the sessions above it, and is answered there."""
    session = await delegate(
        asker,
        provider,
        "touch from-helper.txt",
        ChatStream().text("made it").finish().response(),
        done(),
    )
    asked = await requested(session)
    assert asked["sessionId"] != session.session_id and asked["approval"]["command"] == "touch from-helper.txt"
    # an editor arriving now finds the question in the parent session's snapshot
    late = await asker.connect(approvals=True).call(
        "subscribeSession", {"conversationId": session.id, "sessionId": session.session_id}
    )
    assert [(p["itemId"], p["sessionId"]) for p in late["pendingApprovals"]] == [(asked["itemId"], asked["sessionId"])]
    await asker.call(
        "answerApproval", {"conversationId": session.id, "itemId": asked["itemId"], "decision": "allowOnce"}
    )
    assert (await session.turn_completed())["status"] == "completed"
    resolved = await session.wait_event(lambda e: e["type"] == "approvalResolved")
    assert resolved["sessionId"] == asked["sessionId"] and resolved["decision"] == "allowOnce"
    assert (workspace / "from-helper.txt").exists()


async def test_interrupting_the_parent_withdraws_its_sub_agents_question(
    asker: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    """interruptTurn stops the sub-agent's turn and the parent's; the parent, stopped, stops its
    sub-agent again: that second interrupt must not cut the sub-agent's turn short as it ends
    (the parent would wait for it forever)."""
    session = await delegate(asker, provider, "touch interrupted-helper")
    await requested(session)
    await asker.call("interruptTurn", {"conversationId": session.id})
    assert (await session.turn_completed())["status"] == "interrupted"
    resolved = await session.wait_event(lambda e: e["type"] == "approvalResolved")
    assert resolved["decision"] == "deny"
    assert not (workspace / "interrupted-helper").exists()


async def delegate(asker: Harness, provider: FakeProviderServer, command: str, *after: str) -> Session:
    """A lead agent's session whose turn gives a helper a task; the helper's shell calls ask, and
    its model makes this call first (`after`: the model's answers that follow)."""
    agents = [
        {"name": "lead", "subAgents": ["helper"], "permissions": {"default": "allow"}},
        {"name": "helper", "permissions": {"default": "allow", "tools": {"shell": "ask"}}},
    ]
    await asker.call("setDefinitions", definitions(provider) | {"agents": agents})
    task = json.dumps({"agent": "helper", "task": "do it"})
    provider.enqueue(
        "openai-chat",
        ChatStream().tool_call("c1", "subagent", [task]).finish().response(),
        shell_call(command, "c2"),
        *after,
    )
    conversation = await asker.call("createConversation", {"agentName": "lead"})
    session = await Session.open(asker, conversation["id"])
    await session.submit("delegate")
    return session
