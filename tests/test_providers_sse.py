"""The incremental SSE and NDJSON decoders, fed at every possible chunk boundary."""

from __future__ import annotations

import pytest

from openvaala_lsp.providers.sse import FrameTooLarge, NDJSONDecoder, SSEDecoder, SSEEvent

SAMPLE = (
    ": keep-alive\n\n"
    "event: greeting\n"
    "data: héllo 😀\n"
    "data:second line\n"
    "id: 42\n"
    "retry: 1500\n"
    "flavour: mint\n"
    "\n"
    'data: {"a": "b"}\n'
    "\n"
    "data: [DONE]\n"
    "\n"
)
EXPECTED = [
    SSEEvent(event="greeting", data="héllo 😀\nsecond line", id="42", retry=1500),
    SSEEvent(event="message", data='{"a": "b"}', id="42"),
    SSEEvent(event="message", data="[DONE]", id="42"),
]


def decode(raw: bytes, cuts: list[int]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    start = 0
    for cut in [*cuts, len(raw)]:
        events.extend(decoder.feed(raw[start:cut]))
        start = cut
    events.extend(decoder.finish())
    return events


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_single_split_point_gives_the_same_events(newline: str) -> None:
    raw = SAMPLE.replace("\n", newline).encode()
    for cut in range(len(raw) + 1):
        assert decode(raw, [cut]) == EXPECTED, f"split at byte {cut}"


def test_one_byte_chunks_with_crlf() -> None:
    raw = SAMPLE.replace("\n", "\r\n").encode()
    assert decode(raw, list(range(1, len(raw)))) == EXPECTED


def test_mixed_line_endings() -> None:
    raw = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"
    assert [event.data for event in decode(raw, [])] == ["a\nb\nc", "d"]


def test_comments_are_counted_not_emitted() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": ping\n\n:\n\n") == []
    assert decoder.comments == 2


def test_field_value_rules() -> None:
    raw = b"data\n\ndata:  two spaces\n\nevent: only-a-name\n\ndata: x\nid: a\x00b\n\n"
    events = decode(raw, [])
    # A bare field name means an empty value; one space is stripped; an event without data is not
    # dispatched and its name does not leak into the next; an id with NUL is ignored.
    assert events == [SSEEvent(data=""), SSEEvent(data=" two spaces"), SSEEvent(data="x")]


def test_leading_byte_order_mark_is_dropped() -> None:
    assert decode("\ufeffdata: x\n\n".encode(), [1]) == [SSEEvent(data="x")]


def test_unterminated_last_event_is_flushed_at_end() -> None:
    assert decode(b"data: [DONE]", []) == [SSEEvent(data="[DONE]")]
    assert decode(b"data: [DONE]\r", []) == [SSEEvent(data="[DONE]")]


def test_event_size_cap() -> None:
    with pytest.raises(FrameTooLarge):
        SSEDecoder(max_event_chars=100).feed(b"data: " + b"x" * 200)
    decoder = SSEDecoder(max_event_chars=100)
    with pytest.raises(FrameTooLarge):
        for _ in range(20):
            decoder.feed(b"data: 0123456789\n")
    small = SSEDecoder(max_event_chars=100)
    for _ in range(20):  # many small events are fine: the cap is per event
        assert small.feed(b"data: 0123456789\n\n") == [SSEEvent(data="0123456789")]


def test_ndjson_lines_across_chunks() -> None:
    raw = '{"a": "é"}\r\n\n{"b": 2}\n{"c": 3}'.encode()
    for cut in range(len(raw) + 1):
        decoder = NDJSONDecoder()
        lines = [*decoder.feed(raw[:cut]), *decoder.feed(raw[cut:]), *decoder.finish()]
        assert lines == ['{"a": "é"}', '{"b": 2}', '{"c": 3}'], f"split at byte {cut}"


def test_ndjson_line_cap() -> None:
    decoder = NDJSONDecoder(max_line_bytes=10)
    assert decoder.feed(b"0123\n") == ["0123"]
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"x" * 11)
