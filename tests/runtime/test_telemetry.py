"""Telemetry of a turn, read back by a real OTLP/HTTP receiver: the span tree of a turn with a tool
call (turn -> model calls, tool call) with the GenAI semantic conventions' attributes, no prompt or
file content unless the user opts in, the metrics; a collector that is down costs the turn nothing."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from otlp_receiver import OtlpReceiver, attributes
from turn_helpers import API_KEY, USAGE, Session, definitions

from openvaala_lsp.telemetry.settings import TelemetrySettings
from openvaala_lsp.telemetry.start import telemetry_for

SECRET = "the-prompt-nobody-else-sees"
FILE_TEXT = "the file's own words"


async def _turn_with_a_tool_call(
    home: Path, workspace: Path, provider: FakeProviderServer, settings: TelemetrySettings, *, compact: bool = False
) -> float:
    """Runs one turn (read_file, with a preToolUse hook, then an answer) with that telemetry, then
    (`compact`) a compactContext turn, and stops the runtime (which sends what is left); the first
    turn's seconds."""
    (workspace / "a.txt").write_text(FILE_TEXT)
    harness = await Harness.start(
        home, [workspace], env={"FAKE_API_KEY": API_KEY}, telemetry=telemetry_for(settings, {})
    )
    try:
        hook = {"name": "allow", "event": "preToolUse", "matcher": "read_file", "command": "exit 0"}
        await harness.call("setDefinitions", {**definitions(provider), "hooks": [hook]})
        provider.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", "read_file", ['{"path": "a.txt"}']).finish(usage=USAGE).response(),
            ChatStream().text("It says so.").finish(usage=USAGE).response(),
        )
        session = await Session.open(harness)
        started = time.monotonic()
        await session.submit(f"read a.txt {SECRET}")
        turn = await session.turn_completed()
        took = time.monotonic() - started
        assert turn["status"] == "completed"
        if compact:
            provider.enqueue("openai-chat", ChatStream().text("## Goal\nRead a.txt.").finish(usage=USAGE).response())
            await harness.call("compactContext", {"conversationId": session.id})
            assert (await session.turn_completed(2))["status"] == "completed"
    finally:
        await harness.stop()
    return took


def _strings(span: Any) -> list[str]:
    return [str(value) for value in attributes(span).values()]


async def test_a_turn_is_a_tree_of_spans_with_genai_attributes_and_metrics(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    with OtlpReceiver() as receiver:
        settings = TelemetrySettings(enabled=True, endpoint=receiver.url, headers={"x-team": "tools"})
        await _turn_with_a_tool_call(home, workspace, provider, settings)
        received = receiver.spans()
        assert received, "no span reached the receiver"
        assert all(h.get("x-team") == "tools" for h in receiver.headers)
        resource = received[0][0]
        assert resource["service.name"] == "openvaala" and resource["service.version"]
        spans = [span for _, span in received]
        roots = [s for s in spans if not s.parent_span_id]
        assert [r.name for r in roots] == ["invoke_agent default"]
        root = roots[0]
        turn = attributes(root)
        assert turn["gen_ai.operation.name"] == "invoke_agent" and turn["gen_ai.agent.name"] == "default"
        assert turn["gen_ai.request.model"] == "fake-model" and turn["openvaala.turn.status"] == "completed"
        assert turn["gen_ai.usage.input_tokens"] == 240 and turn["gen_ai.usage.output_tokens"] == 60
        children = sorted((s for s in spans if s.parent_span_id == root.span_id), key=lambda s: s.start_time_unix_nano)
        assert all(s.trace_id == root.trace_id for s in spans)
        names = [s.name for s in children]
        assert names == ["chat fake-model", "hook preToolUse", "execute_tool read_file", "chat fake-model"]
        first_call, hook, tool, second_call = (attributes(s) for s in children)
        assert hook["openvaala.hook.event"] == "preToolUse"
        for call, reason in ((first_call, "tool_calls"), (second_call, "stop")):
            assert call["gen_ai.operation.name"] == "chat"
            assert call["gen_ai.provider.name"] == "fake" and call["gen_ai.request.model"] == "fake-model"
            assert call["gen_ai.usage.input_tokens"] == 120 and call["gen_ai.usage.output_tokens"] == 30
            assert call["gen_ai.response.finish_reasons"] == [reason]
        assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "read_file"
        assert tool["gen_ai.tool.call.id"] == "c1"
        # the model call's span holds the tool call's: the tool runs after the answer that asked for it
        assert children[0].end_time_unix_nano <= children[2].start_time_unix_nano
        # no content by default: not the prompt, not the file, not the answer
        every = [text for span in spans for text in _strings(span)]
        assert not [t for t in every if SECRET in t or FILE_TEXT in t or "It says so." in t]
        assert not any("gen_ai.input.messages" in attributes(s) for s in spans)

        tokens = {
            attributes(point)["openvaala.token.kind"]: point.as_int
            for point in receiver.last_points("openvaala.tokens")
            if attributes(point)["gen_ai.request.model"] == "fake-model"
        }
        assert tokens == {"input": 240, "cached_input": 40, "output": 60}
        (latency,) = receiver.last_points("gen_ai.client.operation.duration")
        assert latency.count == 2 and attributes(latency)["gen_ai.request.model"] == "fake-model"
        (first_token,) = receiver.last_points("gen_ai.client.operation.time_to_first_chunk")
        assert first_token.count == 2
        (tool_time,) = receiver.last_points("openvaala.tool.duration")
        assert tool_time.count == 1 and attributes(tool_time)["gen_ai.tool.name"] == "read_file"
        (active,) = receiver.last_points("openvaala.turns.active")
        assert active.as_int == 0  # one turn started, and ended


async def test_content_only_when_the_user_opts_in(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    with OtlpReceiver() as receiver:
        settings = TelemetrySettings(enabled=True, endpoint=receiver.url, capture_content=True, metrics=False)
        await _turn_with_a_tool_call(home, workspace, provider, settings)
        spans = {s.name: attributes(s) for _, s in receiver.spans()}
        assert not receiver.metrics  # OTEL_METRICS_EXPORTER=none
    call = spans["chat fake-model"]  # the second call's: it holds the tool's result
    assert SECRET in call["gen_ai.input.messages"] and FILE_TEXT in call["gen_ai.input.messages"]
    assert "It says so." in call["gen_ai.output.messages"]
    assert "openvaala" in call["gen_ai.system_instructions"]
    tool = spans["execute_tool read_file"]
    assert tool["gen_ai.tool.call.arguments"] == '{"path": "a.txt"}' and FILE_TEXT in tool["gen_ai.tool.call.result"]


@pytest.mark.parametrize("collector", ["refuses", "never answers"])
async def test_a_collector_that_is_down_costs_the_turn_nothing(
    home: Path, workspace: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch, collector: str
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # spans leave every 10 ms: during the turn
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        port = listening.getsockname()[1]
        if collector == "never answers":
            listening.listen()  # connections are made, requests sent, nothing ever read or answered
        else:
            listening.close()  # nothing listens: refused
        settings = TelemetrySettings(enabled=True, endpoint=f"http://127.0.0.1:{port}")
        started = time.monotonic()
        took = await _turn_with_a_tool_call(home, workspace, provider, settings)
        stopped = time.monotonic() - started - took
    assert took < 5.0
    assert stopped < 10.0  # the stop gives up on the collector within seconds (5 s)


async def test_a_compaction_holds_its_hand_off_call(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    with OtlpReceiver() as receiver:
        settings = TelemetrySettings(enabled=True, endpoint=receiver.url, metrics=False)
        await _turn_with_a_tool_call(home, workspace, provider, settings, compact=True)
        spans = [span for _, span in receiver.spans()]
    roots = sorted((s for s in spans if not s.parent_span_id), key=lambda s: s.start_time_unix_nano)
    assert len(roots) == 2 and len({r.trace_id for r in roots}) == 2  # a trace per turn
    compaction = next(s for s in spans if s.name == "compaction")
    assert compaction.parent_span_id == roots[1].span_id
    assert attributes(compaction)["openvaala.compaction.trigger"] == "manual"
    (handoff,) = [s for s in spans if s.parent_span_id == compaction.span_id]
    call = attributes(handoff)
    assert handoff.name == "chat fake-model" and call["openvaala.model_call.purpose"] == "compaction"
    assert call["gen_ai.usage.output_tokens"] == 30 and call["gen_ai.response.finish_reasons"] == ["stop"]


async def test_a_sub_agents_turn_is_a_span_of_the_tool_call_that_started_it(
    home: Path, workspace: Path, provider: FakeProviderServer
) -> None:
    agents = [
        {"name": "lead", "subAgents": ["researcher"], "tools": ["read_file"]},
        {"name": "researcher", "description": "finds facts", "tools": []},
    ]
    task = json.dumps({"agent": "researcher", "task": "look it up"})
    with OtlpReceiver() as receiver:
        settings = TelemetrySettings(enabled=True, endpoint=receiver.url, metrics=False)
        harness = await Harness.start(
            home, [workspace], env={"FAKE_API_KEY": API_KEY}, telemetry=telemetry_for(settings, {})
        )
        try:
            await harness.call("setDefinitions", {**definitions(provider), "agents": agents})
            provider.enqueue(
                "openai-chat",
                ChatStream().tool_call("c1", "subagent", [task]).finish(usage=USAGE).response(),
                ChatStream().text("42.").finish(usage=USAGE).response(),
                ChatStream().text("It is 42.").finish(usage=USAGE).response(),
            )
            conversation = await harness.call("createConversation", {"agentName": "lead"})
            session = await Session.open(harness, conversation["id"])
            await session.submit("find the answer")
            assert (await session.turn_completed())["status"] == "completed"
        finally:
            await harness.stop()
        spans = [s for _, s in receiver.spans()]
    named = {s.name: s for s in spans if not s.name.startswith("chat")}
    lead, tool = named["invoke_agent lead"], named["execute_tool subagent"]
    researcher = named["invoke_agent researcher"]
    assert not lead.parent_span_id and tool.parent_span_id == lead.span_id
    assert researcher.parent_span_id == tool.span_id and researcher.trace_id == lead.trace_id
    (answer,) = [s for s in spans if s.parent_span_id == researcher.span_id]
    assert answer.name == "chat fake-model"
    assert [s.name for s in spans if s.parent_span_id == lead.span_id].count("chat fake-model") == 2
