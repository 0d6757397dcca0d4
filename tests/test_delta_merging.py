"""A provider hands over the deltas of one socket read as one delta (`base.merge_deltas`): the turn
then appends, publishes and reports once per read instead of once per piece. Only the answer's
first events go out before the rest of their read is translated."""

from __future__ import annotations

import httpx
import pytest
from fake_provider import ChatStream, ScriptedResponse, stream_script

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import ModelRef, ToolCall
from openvaala_lsp.providers import base
from openvaala_lsp.providers.base import MERGED_CHARS, StreamEvent, delta_text, merge_deltas
from openvaala_lsp.providers.factory import make_provider
from openvaala_lsp.providers.retry import RetryPolicy

APIS = ["openai-chat", "openai-responses", "anthropic", "ollama"]


def test_runs_of_deltas_become_one_and_everything_else_keeps_its_place() -> None:
    done = base.ToolCallDone(index=0, call=ToolCall(call_id="c", name="f", arguments='{"a": 1}'))
    events: list[StreamEvent] = [
        base.ReasoningDelta(text="think"),
        base.ReasoningDelta(text="ing"),
        base.ReasoningDone(data={"id": "r"}),
        base.TextDelta(text="Hé"),
        base.TextDelta(text="llo"),
        base.TextDelta(text=" 🌍"),
        base.ToolCallStarted(index=0, call_id="c", name="f"),
        base.ToolCallDelta(index=0, arguments='{"a"'),
        base.ToolCallDelta(index=0, arguments=": 1}"),
        base.ToolCallDelta(index=1, arguments="{}"),
        base.ToolCallDelta(index=0, arguments=""),
        done,
        base.TextDelta(text="after"),
        base.Completed(finish_reason="stop"),
    ]
    assert merge_deltas(events) == [
        base.ReasoningDelta(text="thinking"),
        base.ReasoningDone(data={"id": "r"}),
        base.TextDelta(text="Héllo 🌍"),
        base.ToolCallStarted(index=0, call_id="c", name="f"),
        base.ToolCallDelta(index=0, arguments='{"a": 1}'),
        base.ToolCallDelta(index=1, arguments="{}"),  # another call's piece ends the run
        base.ToolCallDelta(index=0, arguments=""),
        done,
        base.TextDelta(text="after"),
        base.Completed(finish_reason="stop"),
    ]


def test_text_and_reasoning_runs_stay_apart_and_the_translator_s_events_are_not_changed() -> None:
    first, second = base.TextDelta(text="a"), base.TextDelta(text="b")
    alone = base.ReasoningDelta(text="r")
    merged = merge_deltas([first, second, alone, base.TextDelta(text="c")])
    assert merged == [base.TextDelta(text="ab"), base.ReasoningDelta(text="r"), base.TextDelta(text="c")]
    assert (first.text, second.text) == ("a", "b")
    assert merged[1] is alone  # a delta on its own is passed on as it is
    assert merge_deltas([]) == []


def one_read(response: ScriptedResponse) -> httpx.MockTransport:
    """The whole response body in a single read."""
    body = b"".join(data for _, data in response.frames)
    return httpx.MockTransport(lambda request: httpx.Response(200, headers=response.headers, content=body))


async def stream(api: str, response: ScriptedResponse) -> tuple[list[StreamEvent], base.ProviderError | None]:
    definition = ModelDefinition(ref=ModelRef(provider="p", name="m"), api=api, api_key_env="K")
    provider = make_provider(definition, {"K": "k"}, retry=RetryPolicy(max_retries=0), transport=one_read(response))
    events: list[StreamEvent] = []
    failure = None
    try:
        async for event in provider.stream(base.ModelRequest(model="m")):
            events.append(event)
    except base.ProviderError as exc:
        failure = exc
    finally:
        await provider.aclose()
    return events, failure


@pytest.mark.parametrize("api", APIS)
async def test_a_read_s_deltas_come_as_one_after_the_answer_s_first(api: str) -> None:
    script = stream_script(api).text("Hé", "llo ", "wörld 🌍").tool_call("c1", "f", ['{"k"', ': "ü"}'])
    events, failure = await stream(api, script.finish().response())
    assert failure is None
    texts = [event for event in events if isinstance(event, base.TextDelta)]
    # the answer's first delta at once, then the rest of the read's as one
    assert texts == [base.TextDelta(text="Hé"), base.TextDelta(text="llo wörld 🌍")]
    assert [event.call for event in events if isinstance(event, base.ToolCallDone)] == [
        ToolCall(call_id="c1", name="f", arguments='{"k": "ü"}')
    ]
    assert isinstance(events[-1], base.Completed)


async def test_deltas_before_an_error_in_the_same_read_come_out_first() -> None:
    response = ChatStream().text("partial ", "answer", " here").error("boom").response()
    events, failure = await stream("openai-chat", response)
    assert events == [base.TextDelta(text="partial "), base.TextDelta(text="answer here")]
    assert failure is not None and failure.message == "error in model stream: boom"


def test_a_merged_delta_stops_growing_at_merged_chars() -> None:
    """An editor that stops reading is dropped once it holds too many events (maxBufferedEvents):
    merged deltas stay small enough for that bound to bound its memory too."""
    half, big = MERGED_CHARS // 2, MERGED_CHARS * 5 // 2
    pieces = [base.TextDelta(text="a" * half) for _ in range(5)]
    merged = merge_deltas([*pieces, base.TextDelta(text="b" * big), base.TextDelta(text="c")])
    assert [len(delta_text(event)) for event in merged] == [2 * half, 2 * half, half, big, 1]  # one long piece as it is
    assert "".join(delta_text(event) for event in merged) == "a" * 5 * half + "b" * big + "c"
