"""Sub-agents: an agent's `subAgents` become the `subagent` tool. A call runs the task as a new session
of the same conversation (`parentSessionId`, the input `from` the parent session, announced with
`sessionAdded`), with its own items and turns; its final answer is the tool's result. Its usage
rolls up into the parent session's and the parent turn's. Interrupting the parent interrupts it; its
failure is an error result the parent's model reads."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    Item,
    ItemStatus,
    ItemType,
    ModelSelection,
    PendingInput,
    Session,
    Turn,
    TurnStatus,
    new_id,
    utcnow,
)
from openvaala_lsp.runtime import catalog, context
from openvaala_lsp.runtime.model_clients import effective_selection
from openvaala_lsp.tools.base import ToolContext, ToolOutput

SUBAGENT_TOOL = "subagent"
MAX_DEPTH = 3  # a sub-agent's sub-agents, and theirs: no deeper


class Runner(Protocol):
    """What the tool needs of a session runner (the parent's, and the child's)."""

    session: Session

    async def run_task(self, pending: PendingInput) -> Turn: ...

    def interrupt(self) -> str: ...

    async def history(self) -> list[Item]: ...

    def add_usage(self, turn: Turn) -> None: ...


class Sessions(Protocol):
    """What the tool needs of the conversation: a new session under the parent, with its runner."""

    async def add_session(self, session: Session) -> Runner: ...


class SubAgentTool:
    name = SUBAGENT_TOOL

    def __init__(self, sessions: Sessions, parent: Runner, definitions: Definitions, allowed: list[str]) -> None:
        self._sessions = sessions
        self._parent = parent
        self._definitions = definitions
        self._allowed = allowed
        described = "; ".join(f"{a.name}: {a.description or 'no description'}" for a in self._agents())
        self.description = (
            "Hands a self-contained task to a sub-agent, which works on it in a session of its own and "
            f"returns its final answer. Give it everything it needs in `task`. Sub-agents: {described}."
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": allowed, "description": "which sub-agent"},
                "task": {"type": "string", "description": "the task, with every detail it needs"},
            },
            "required": ["agent", "task"],
        }

    def time_limit(self, arguments: dict[str, Any]) -> None:
        return None  # a turn of its own, whose calls have their limits; an interrupt reaches it

    def _agents(self) -> list[Any]:
        return [a for name in self._allowed if (a := catalog.configured_agent(self._definitions, name)) is not None]

    async def run(self, arguments: dict[str, Any], context_: ToolContext) -> ToolOutput:
        name, task = arguments.get("agent"), arguments.get("task")
        if name not in self._allowed:
            return ToolOutput(
                text=f"no such sub-agent: {name!r}; sub-agents: {', '.join(self._allowed)}", is_error=True
            )
        if not isinstance(task, str) or not task.strip():
            return ToolOutput(text="`task` must say what the sub-agent should do", is_error=True)
        parent = self._parent.session
        model = effective_selection(self._definitions, None, name)
        session = Session(
            id=new_id("sess"),
            conversation_id=parent.conversation_id,
            agent_name=name,
            model=model if model.model is not None else ModelSelection(model=parent.model.model),
            created_at=utcnow(),
            parent_session_id=parent.id,
        )
        child = await self._sessions.add_session(session)
        pending = PendingInput(
            item=Item(
                id=new_id("item"),
                conversation_id=session.conversation_id,
                session_id=session.id,
                type=ItemType.USER_MESSAGE,
                status=ItemStatus.PENDING,
                created_at=utcnow(),
                content=[Content(type="text", text=task)],
                from_=Address(kind=AddressKind.SESSION, session_id=parent.id),
            )
        )
        running = asyncio.ensure_future(child.run_task(pending))
        try:
            turn = await asyncio.shield(running)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                child.interrupt()  # the parent was interrupted: so is its sub-agent
            with contextlib.suppress(asyncio.CancelledError):
                turn = await running
                self._parent.add_usage(turn)
            raise
        self._parent.add_usage(turn)
        if turn.status is not TurnStatus.COMPLETED:
            why = f": {turn.error.kind}: {turn.error.message}" if turn.error else ""
            return ToolOutput(text=f"the sub-agent {name} {turn.status.value}{why}", is_error=True)
        answer = next(
            (
                context.item_text(item)
                for item in reversed(await child.history())
                if item.turn_id == turn.id and item.type == ItemType.ASSISTANT_MESSAGE
            ),
            "",
        )
        return ToolOutput(text=answer or f"(the sub-agent {name} finished without an answer)")
