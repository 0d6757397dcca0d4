"""Smoke test with the embedded model: llama.cpp's server with Gemma 3 270M, started by the runtime and
asked the demo's question, whose answer must be an answer: not the prompt echoed, not a loop."""

from __future__ import annotations

import importlib.util
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from lsp_client import LspClient
from processes import openvaala

from openvaala_lsp.cli.demo import AGENT as DEMO_AGENT, PROMPT as DEMO_PROMPT
from openvaala_lsp.definitions import embedded_model
from openvaala_lsp.protocol.converter import unstructure

NGRAM = 4  # words; a sentence of an answer may repeat a phrase of the question, or once of itself
MAX_REPEATS = 2

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None and not os.environ.get("OPENVAALA_REQUIRE_LOCAL_MODEL"),
    reason="the local-model extra is not installed",
)


def normalised(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def echoes(prompt: str, answer: str) -> bool:
    return normalised(prompt) in normalised(answer)


def repetition(text: str) -> str | None:
    """The line or word n-gram repeated more than MAX_REPEATS times, if any: a model stuck in a loop."""
    lines = Counter(normalised(line) for line in text.splitlines() if normalised(line))
    words = normalised(text).split()
    ngrams = Counter(" ".join(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1))
    for counts in (lines, ngrams):
        repeated = [item for item, count in counts.items() if count > MAX_REPEATS]
        if repeated:
            return repeated[0]
    return None


def test_the_checks_catch_an_echo_and_a_loop() -> None:
    """What the model answered when it was prompted as a chat model."""
    echoed = f"{DEMO_PROMPT} mendatang\n" * 5
    assert echoes(DEMO_PROMPT, echoed) and repetition(echoed) == normalised(f"{DEMO_PROMPT} mendatang")
    looping = "It is a table. " + "The history is kept in the table and " * 3
    assert not echoes(DEMO_PROMPT, looping) and repetition(looping) == "the history is kept"
    answer = "A history is a record of an agent's actions. It can be used to track the agent over time."
    assert not echoes(DEMO_PROMPT, answer) and repetition(answer) is None


@needs_model
async def test_streamed_turn_with_the_embedded_model(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    await lsp.initialize([workspace])
    try:
        await lsp.call("setDefinitions", {"models": [unstructure(embedded_model())], "agents": [DEMO_AGENT]})
        conversation = await lsp.call("createConversation", {"agentName": DEMO_AGENT["name"]})
        cid = conversation["id"]
        session = (await lsp.call("listSessions", {"conversationId": cid}))["items"][0]["id"]
        sub = (await lsp.call("subscribeSession", {"conversationId": cid, "sessionId": session}))["subscriptionId"]
        await lsp.call("submitInput", {"conversationId": cid, "content": [{"type": "text", "text": DEMO_PROMPT}]})
        done = await lsp.wait_for(
            lambda m: (
                m["method"] == "openvaala/sessionEvent"
                and any(e["type"] == "turnCompleted" for e in m["params"]["events"])
            ),
            timeout=180,
        )
        turn = next(e["turn"] for e in done["params"]["events"] if e["type"] == "turnCompleted")
        assert turn["status"] == "completed", turn
        events = [e for n in lsp.of("openvaala/sessionEvent", sub) for e in n["events"]]
        deltas = [e["delta"] for e in events if e["type"] == "itemDelta"]
        assert len(deltas) > 1  # streamed, token by token
        items = (await lsp.call("listItems", {"conversationId": cid}))["items"]
        answer = items[-1]["item"]
        assert answer["type"] == "assistantMessage" and answer["content"][0]["text"] == "".join(deltas)
        text = answer["content"][0]["text"]
        assert normalised(text), "empty answer"
        assert not echoes(DEMO_PROMPT, text), f"the prompt echoed: {text!r}"
        assert repetition(text) is None, f"a repetition loop ({repetition(text)!r}): {text!r}"
        # llama.cpp reports no usage while streaming: the runtime estimates it and says so
        assert turn["usage"]["outputTokens"] > 0 and turn["usage"]["inputTokens"] > 0
        context = await lsp.call("getSessionContextUsage", {"conversationId": cid, "sessionId": session})
        assert context["lastRequest"]["model"] == {"provider": "local", "name": "gemma3-270m"}
        assert context["window"] == 4096
        assert [e["context"]["source"] for e in events if e["type"] == "contextUsageUpdated"] == ["estimated"]
    finally:
        await lsp.shutdown()


async def test_the_demo_prints_token_usage_with_the_runtime_host_up(home: Path, workspace: Path) -> None:
    code, text, err = await openvaala(home, "demo", "--directory", str(workspace), "Say hello.", wait=180)
    assert code == 0, err
    assert "turn completed:" in text and "token usage by model and day (openvaala sql):" in text
    assert "│ local    │ gemma3-270m │      1 │" in text  # the usage table, read while the editor was open
