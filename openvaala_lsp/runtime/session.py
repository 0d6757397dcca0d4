"""A session of an open conversation: its input queue, its running turn, its subscribers and its
accounting.

State changes happen synchronously on the event loop and are published in the same step, so a
subscriber's snapshot (last saved ordinal, pending inputs, streaming items) plus the events after it
describe the session exactly. Storage writes happen before the events that report them. The agent
loop itself is `turns.py`; this class starts turns and keeps what outlives them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import (
    ContextUsage,
    Item,
    ItemStatus,
    ModelCall,
    PendingInput,
    Session,
    SessionInputMode,
    SessionRuntimeInfo,
    SessionState,
    Turn,
    TurnReason,
    TurnStatus,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.api import PendingInputInfo, StreamingItem
from openvaala_lsp.protocol.errors import InvalidState, NoModelConfigured
from openvaala_lsp.runtime import catalog, endings, turns
from openvaala_lsp.runtime.accounting import SessionUsage
from openvaala_lsp.runtime.approvals import Approvals
from openvaala_lsp.runtime.hosts import SessionHost
from openvaala_lsp.runtime.input_queue import InputQueue
from openvaala_lsp.runtime.model_clients import resolve_model
from openvaala_lsp.runtime.session_hooks import SessionHooks
from openvaala_lsp.runtime.skills import agent_skills, skills_prompt
from openvaala_lsp.runtime.streaming import TurnItems
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.runtime.turns import ActiveTurn
from openvaala_lsp.storage.interfaces import context_items
from openvaala_lsp.telemetry.base import CALLING

logger = logging.getLogger(__name__)


def agent_instructions(definitions: Definitions, agent_name: str, directory: str) -> str:
    """The agent's instructions (or the default ones) and the list of its skills."""
    agent = catalog.configured_agent(definitions, agent_name)
    base = agent.instructions if agent is not None and agent.instructions else None
    base = base or DEFAULT_INSTRUCTIONS.format(directory=directory)
    listed = skills_prompt(agent_skills(definitions, agent))
    return f"{base}\n\n{listed}" if listed else base


DEFAULT_INSTRUCTIONS = (
    "You are openvaala, a coding agent working in the user's project. Use the tools to inspect and "
    "change files and to run commands; paths are relative to the working directory {directory}. "
    "Be concise and report what you did."
)


class SessionRunner:
    def __init__(self, host: SessionHost, session: Session) -> None:
        self.host = host
        self.session = session
        self.state = SessionState.IDLE
        self.queue = InputQueue(host.storage, session.conversation_id)
        self.active: ActiveTurn | None = None
        self.last_turn: Turn | None = None
        self.subscribers: set[Subscription] = set()
        self.usage = SessionUsage()
        self.loaded_history: list[Item] | None = None  # the session's saved items, loaded on first turn
        self._session_started = False  # sessionStart fires on this runtime's first turn of the session
        self._session_context: list[str] = []
        self._waiting: dict[str, asyncio.Future[Turn]] = {}  # input item id -> the turn that takes it
        self.approvals = Approvals(session.id, self._publish_approval, self._can_answer)

    def can_answer(self) -> bool:
        """Whether a subscriber of this session can answer approvals."""
        return any(sub.answers_approvals and not sub.closed for sub in self.subscribers)

    def _can_answer(self) -> bool:
        return self.can_answer() or self.host.ancestors_can_answer(self.session)

    def _publish_approval(self, event: Any) -> None:
        self.publish(event)
        self.host.publish_to_ancestors(self.session, event)

    # Views

    @property
    def busy(self) -> bool:
        return self.active is not None or self.queue.waiting

    @property
    def last_call(self) -> ModelCall | None:
        return self.usage.last_call

    def runtime_info(self) -> SessionRuntimeInfo:
        turn = self.active.turn if self.active else None
        return SessionRuntimeInfo(
            session=self.session,
            state=self.state,
            active_turn_id=turn.id if turn else None,
            active_turn_model=self.session.model if turn else None,
            last_turn_id=self.last_turn.id if self.last_turn else None,
            last_turn_status=self.last_turn.status if self.last_turn else None,
            last_turn_reason=self.last_turn.reason if self.last_turn else None,
            context=self.usage.context if self.usage.context.window else ContextUsage(window=self._window()),
            usage=self.usage.usage,
        )

    def _window(self) -> int:
        """The context window of the session's model, 0 while no model is configured."""
        try:
            return resolve_model(self.host.definitions(), self.session.model, self.session.agent_name).context_window
        except NoModelConfigured:
            return 0

    def pending_infos(self) -> list[PendingInputInfo]:
        return self.queue.infos()

    def streaming_items(self) -> list[StreamingItem]:
        return self.active.items.snapshot() if self.active is not None else []

    def next_request_usage(self, window: int) -> ContextUsage:
        return self.usage.next_request(self.loaded_history or [], window)

    # Publishing

    def publish(self, event: Any) -> None:
        for sub in list(self.subscribers):
            sub.publish(event)

    def audience(self) -> Callable[[Any], None]:
        """Publishes, whenever called, to the subscribers there are now (`TurnItems.publish`)."""
        subscribers = list(self.subscribers)

        def publish(event: Any) -> None:
            for sub in subscribers:
                sub.publish(event)

        return publish

    def set_state(self, state: SessionState) -> None:
        self.state = state
        self.publish(events.StateChanged(state=state))
        self.host.session_changed(self.runtime_info())

    # Inputs

    async def add_input(self, pending: PendingInput) -> None:
        """Queues, steers or interrupts with an input, and returns once it is durable. A turn it
        starts at once commits it with the turn's own start (one commit before the model's answer
        can be shown, not two); otherwise it commits by itself. An input that cannot be saved
        leaves the queue."""
        before = self.active
        if pending.mode == SessionInputMode.STEER and before is not None:
            pending.turn_id = before.turn.id
        await self.queue.add(pending)
        self.publish(events.PendingInputAdded(item=copy.deepcopy(pending.item), mode=pending.mode.value))
        self.host.session_changed(self.runtime_info())
        if pending.mode == SessionInputMode.INTERRUPT and before is not None:
            self.interrupt()
        self.maybe_start()
        started = self.active if self.active is not before else None
        try:
            if started is not None and pending.item.id in self.queue.taken:
                await asyncio.shield(started.inputs_saved)
            else:
                await self.host.storage.flush()
        except Exception:
            self.queue.unsaved(pending)
            raise

    async def run_task(self, pending: PendingInput) -> Turn:
        """Adds an input and waits for the turn that runs it to end (a sub-agent's task)."""
        waiter: asyncio.Future[Turn] = asyncio.get_running_loop().create_future()
        self._waiting[pending.item.id] = waiter
        await self.add_input(pending)
        return await waiter

    def add_usage(self, turn: Turn) -> None:
        """A sub-agent's turn spent this on the session's behalf: it counts in its totals and turn."""
        self.usage.add(turn.usage)
        if self.active is not None:
            self.active.turn.usage = self.active.turn.usage + turn.usage
        self.publish(events.UsageUpdated(usage=self.usage.usage))
        self.host.session_changed(self.runtime_info())

    async def steer(self, item_id: str, turn_id: str) -> None:
        self.queue.find(item_id)
        self._check_running(turn_id)
        await self.queue.steer(item_id, turn_id)

    async def withdraw(self, item_id: str) -> Item:
        item = await self.queue.withdraw(item_id)
        self.publish(events.PendingInputRemoved(item_id=item_id, reason="withdrawn"))
        self.host.session_changed(self.runtime_info())
        return item

    async def interrupt_with(self, item_id: str, turn_id: str) -> None:
        self.queue.find(item_id)
        self._check_running(turn_id)
        self.queue.run_next(item_id)
        self.interrupt()

    def _check_running(self, turn_id: str) -> None:
        if self.active is None or self.active.turn.id != turn_id:
            raise InvalidState(f"turn {turn_id} is not running")

    def interrupt(self) -> str:
        """Stops the running turn now; it ends `interrupted`, keeping what streamed so far. The user's
        interrupt, but for a sub-agent's turn stopped by its parent as the runtime stops."""
        if self.active is None or self.active.task is None:
            raise InvalidState("no turn is running")
        if self.active.interrupting:
            # once is enough: a second cancel (interruptTurn stops every session of the conversation,
            # then the parent stops its sub-agent's) could land in the turn's end and cut its saving
            return self.active.turn.id
        self.active.interrupting = True
        self.active.stopped_by = TurnReason.RUNTIME_STOPPED if self.host.closed else TurnReason.USER_INTERRUPT
        if self.active.committed or self.active.checking:
            self.active.task.cancel()
        return self.active.turn.id

    # Turns

    def maybe_start(self) -> None:
        """Starts a turn with every pending input when the session is idle."""
        if self.active is not None or self.host.closed or not self.queue.waiting:
            return
        try:
            self._start(turns.execute, claim=True)
        except NoModelConfigured:
            return  # submit checked this; definitions changed since: the inputs wait

    def start_compaction(self) -> str:
        """Starts a turn that compacts the context (compactContext); its id."""
        if self.active is not None:
            raise InvalidState("a turn is running: compact after it ends, or interrupt it")
        return self._start(turns.compaction_turn, claim=False).turn.id

    def _start(self, work: turns.TurnWork, *, claim: bool) -> ActiveTurn:
        definitions = self.host.definitions()
        model = resolve_model(definitions, self.session.model, self.session.agent_name)
        turn = Turn(
            id=new_id("turn"),
            conversation_id=self.session.conversation_id,
            session_id=self.session.id,
            started_at=utcnow(),
            model=model.ref,
        )
        inputs = self.queue.claim() if claim else []
        # a sub-agent's turn, started from its parent's tool call, is a span of that call
        trace = self.host.telemetry.turn(turn, self.session.agent_name, within=CALLING.get())
        items = TurnItems(turn, self.host.storage, self.publish, self.audience, self.saved, self.remember)
        hooks = SessionHooks(
            self.host.hooks(definitions),
            self.session,
            cwd=self.host.directory(),
            environment=self.host.environment,
            publish=items.publish,  # what a hook says comes in order with the turn's events
            trace=trace,
        )
        active = ActiveTurn(turn=turn, definitions=definitions, model=model, items=items, hooks=hooks, trace=trace)
        self.active = active
        active.task = self.host.spawn(self._run(active, inputs, work), name=f"turn {turn.id}")
        return active

    async def _run(self, active: ActiveTurn, inputs: list[PendingInput], work: turns.TurnWork) -> None:
        turn = active.turn
        storage = self.host.storage
        try:
            if self.session.model.model is None:  # created before any model was configured
                self.session.model = attrs.evolve(self.session.model, model=active.model.ref)
                await storage.update_session(self.session)
            # committed with the turn's inputs (`turns.record_inputs`), which then announces the turn
            await storage.save_turn(turn, new=True)
            await storage.touch_conversation(turn.conversation_id, turn.started_at)
        except asyncio.CancelledError:
            turn.status = TurnStatus.INTERRUPTED
        except Exception as exc:
            turns.fail_internally(turn, exc, "turn %s could not start")
        else:
            await work(self, active, inputs)
        await self._finish(active)
        if active.committed:  # inputs given back before they were recorded run (and are awaited) later
            for pending in inputs:
                waiter = self._waiting.pop(pending.item.id, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(turn)

    def announce(self, active: ActiveTurn) -> None:
        """The turn is saved: subscribers hear that it started (once)."""
        if not active.announced:
            active.announced = True
            self.publish(events.TurnStarted(turn=copy.deepcopy(active.turn)))
            self.set_state(SessionState.RUNNING)

    async def _finish(self, active: ActiveTurn) -> None:
        turn = active.turn
        storage = self.host.storage
        # items still streaming keep what they have, marked interrupted; they, what the turn saved
        # last and its own row go in one commit
        await active.items.complete_many(active.items.unsaved(), ItemStatus.INTERRUPTED, later=True, now=False)
        active.items.stop_saving()
        self.queue.release()
        turn.ended_at = utcnow()
        turn.reason = endings.reason_for(
            turn,
            stopped_by=active.stopped_by,
            ended_by=active.ended_by,
            finish_reason=active.finish_reason,
            runtime_stopping=self.host.closed,
        )
        active.trace.finish(turn)
        started = active.inputs_saved  # its first commit holds the turn's row: only what changed is written
        await storage.save_turn(turn, saved=started.done() and not started.cancelled() and not started.exception())
        await storage.touch_conversation(turn.conversation_id, turn.ended_at)
        try:
            await active.items.settle()  # reports what those commits saved, the turn's start first
            await storage.flush()  # the turn's row, durable before turnCompleted
        except Exception as exc:
            logger.exception("turn %s: its last writes could not be saved", turn.id)
            active.inputs_done(exc)
        active.inputs_done()  # inputs it never recorded are back in the queue, committed
        self.announce(active)  # a turn that ended before announcing itself (interrupted, failed)
        if turn.error is not None:
            self.publish(events.ErrorEvent(error=turn.error))
        self.publish(events.TurnCompleted(turn=copy.deepcopy(turn)))
        self.active = None
        self.last_turn = turn
        self.set_state(SessionState.IDLE)
        self.host.turn_ended()
        if turn.status != TurnStatus.FAILED:
            self.maybe_start()

    # What the agent loop needs (turns.TurnOwner)

    def saved(self, ordinal: int, item: Item, *, remembered: bool = False) -> None:
        self.host.saved(ordinal)
        if not remembered:
            self.remember(item)
        self.publish(events.ItemCompleted(ordinal=ordinal, item=item))

    def remember(self, item: Item) -> None:
        if self.loaded_history is not None:  # else the history loads from storage, which has it then
            self.loaded_history.append(item)

    async def history(self) -> list[Item]:
        if self.loaded_history is None:
            # without the turns a revert took out of the context
            self.loaded_history = await context_items(self.host.storage, self.session.conversation_id, self.session.id)
        return self.loaded_history

    async def session_context(self, history: Sequence[Item], turn: Turn, hooks: SessionHooks) -> list[str]:
        if not self._session_started:
            self._session_started = True
            source = "resume" if any(item.turn_id != turn.id for item in history) else "startup"
            started = await hooks.fire("sessionStart", {"source": source}, match=source)
            self._session_context = started.additional_context
        return self._session_context

    def instructions(self, definitions: Definitions) -> str:
        return agent_instructions(definitions, self.session.agent_name, self.host.directory())

    async def stop(self) -> None:
        """Runtime shutdown: the running turn ends interrupted and is saved."""
        if self.active is not None and self.active.task is not None:
            task = self.active.task
            if not self.active.interrupting:  # else it is ending already (see `interrupt`)
                self.active.interrupting = True
                self.active.stopped_by = TurnReason.RUNTIME_STOPPED
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
