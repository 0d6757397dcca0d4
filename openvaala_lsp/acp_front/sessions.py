"""One ACP session: a conversation of the runtime with its main session subscribed, the translator of
its events, and the prompts waiting for their turn's end."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import attrs

from openvaala_lsp.acp_front.mcp_servers import EditorMcpServers
from openvaala_lsp.acp_front.updates import Translator

RECENT = 64  # inputs taken and turns ended, kept for a prompt whose answer came after its events


@attrs.define(eq=False)
class AcpSession:
    id: str  # the ACP session id: the conversation's id when it was created or loaded
    conversation_id: str
    session_id: str  # the runtime's main session of the conversation
    agent_name: str
    cwd: str
    subscription_id: str = ""
    translator: Translator = attrs.Factory(Translator)
    held: list[dict[str, Any]] | None = None  # events kept back while the history is replayed
    inputs: dict[str, asyncio.Future[dict[str, Any]]] = attrs.Factory(dict)  # input item id -> its turn's end
    turns: dict[str, asyncio.Future[dict[str, Any]]] = attrs.Factory(dict)  # turn id -> its end
    taken: OrderedDict[str, str] = attrs.Factory(OrderedDict)  # input item id -> turn id that took it
    ended: OrderedDict[str, dict[str, Any]] = attrs.Factory(OrderedDict)  # turn id -> the ended turn
    asked: set[str] = attrs.Factory(set)  # approvals asked of the editor
    mcp: EditorMcpServers | None = None  # the editor's MCP servers for this session
    mcp_tools: list[dict[str, Any]] = attrs.Factory(list)  # their tools as setClientMcpServers takes them

    def wait_input(self, item_id: str) -> asyncio.Future[dict[str, Any]]:
        """The end of the turn that takes this input (it may have been taken, even ended, already)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        turn_id = self.taken.get(item_id)
        if turn_id is None:
            self.inputs[item_id] = future
        elif turn_id in self.ended:
            future.set_result(self.ended[turn_id])
        else:
            self.turns[turn_id] = future
        return future

    def input_taken(self, item_id: str, turn_id: str) -> None:
        _remember(self.taken, item_id, turn_id)
        if (future := self.inputs.pop(item_id, None)) is not None:
            self.turns[turn_id] = future

    def input_dropped(self, item_id: str) -> None:
        """Withdrawn before a turn took it: the prompt ends cancelled."""
        if (future := self.inputs.pop(item_id, None)) is not None and not future.done():
            future.set_result({"reason": "userInterrupt"})

    def turn_ended(self, turn: dict[str, Any]) -> None:
        turn_id = str(turn.get("id"))
        _remember(self.ended, turn_id, turn)
        if (future := self.turns.pop(turn_id, None)) is not None and not future.done():
            future.set_result(turn)

    def fail_all(self, error: BaseException) -> None:
        for future in [*self.inputs.values(), *self.turns.values()]:
            if not future.done():
                future.set_exception(error)
        self.inputs.clear()
        self.turns.clear()


def _remember(recent: OrderedDict[str, Any], key: str, value: Any) -> None:
    recent[key] = value
    while len(recent) > RECENT:
        recent.popitem(last=False)
