"""A turn's items as deltas grow them (`runtime.streaming.TurnItems`): every delta published, the item
whole at the end however long the answer (a text and a tool call's arguments grow in place, not by a
copy of all of it at each delta), and saved as it grows every 4 KiB, not per delta."""

from __future__ import annotations

from typing import Any

from openvaala_lsp.model import Item, ItemType, ToolCall, Turn, utcnow
from openvaala_lsp.protocol.events import ItemDelta, ItemStarted
from openvaala_lsp.runtime.streaming import SAVE_EVERY_CHARS, TurnItems

DELTAS = 50_000  # a ~200 KB answer: a copy at each delta took ~1 s of the host's time


class Saves:
    """A storage that only counts `save_streaming` per item (deltas touch nothing else)."""

    def __init__(self) -> None:
        self.per_item: dict[str, int] = {}

    def save_streaming(self, item: Item) -> None:
        self.per_item[item.id] = self.per_item.get(item.id, 0) + 1


def turn_items(published: list[Any], saves: Saves | None = None) -> TurnItems:
    turn = Turn(id="turn_1", conversation_id="conv_1", session_id="ses_1", started_at=utcnow())

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no save or history here")

    return TurnItems(
        turn=turn,
        storage=saves or Saves(),  # type: ignore[arg-type]  # deltas only save what streams
        publish_now=published.append,
        audience=lambda: published.append,
        saved=never,
        remember=never,
    )


async def test_a_long_answer_and_long_arguments_arrive_whole() -> None:
    published: list[Any] = []
    saves = Saves()
    items = turn_items(published, saves)
    text = items.start_text(ItemType.ASSISTANT_MESSAGE)
    call = items.start(ItemType.TOOL_CALL, tool_call=ToolCall(call_id="call_1", name="write_file", arguments=""))
    pieces = [f"{n % 10}é" for n in range(DELTAS)]
    for piece in pieces:
        items.append_text(text, piece)
        items.append_arguments(call, piece)
    whole = "".join(pieces)
    content = items.streaming[text].content
    tool_call = items.streaming[call].tool_call
    assert content is not None and content[0].text == whole
    assert tool_call is not None and tool_call.arguments == whole
    started = [event for event in published if isinstance(event, ItemStarted)]
    assert [event.item_index for event in started] == [text, call]
    assert started[0].item.content is not None and started[0].item.content[0].text == ""  # a copy, as it started
    deltas = [event for event in published if isinstance(event, ItemDelta)]
    assert len(deltas) == 2 * DELTAS
    assert "".join(event.delta for event in deltas if event.item_index == text) == whole
    # each saved after every 4 KiB of growth (the loop never ran meanwhile: no save by time)
    expected = len(whole) // SAVE_EVERY_CHARS
    assert saves.per_item == {items.streaming[text].id: expected, items.streaming[call].id: expected}


async def test_a_text_someone_holds_is_not_changed_under_them() -> None:
    items = turn_items([])
    index = items.start_text(ItemType.ASSISTANT_MESSAGE)
    items.append_text(index, "first ")
    content = items.streaming[index].content
    assert content is not None
    held = content[0].text  # a snapshot being written out, say
    items.append_text(index, "second")
    assert held == "first " and content[0].text == "first second"
