"""The agent loop: one turn of a session. It records the turn's inputs, then calls the model, streams
its answer into items, runs the tool calls it makes, and repeats until the model stops (or a hook,
an interrupt or an error ends the turn). The session around it (`TurnOwner`) keeps the queue, the
history and the accounting; this module only drives one turn through them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from openvaala_lsp.definitions import Definitions, ModelDefinition
from openvaala_lsp.model import (
    Address,
    AddressKind,
    CompactionTrigger,
    Content,
    ContextUsageSource,
    ErrorInfo,
    Item,
    ItemStatus,
    ItemType,
    ModelCall,
    ModelCallPurpose,
    PendingInput,
    Session,
    SessionState,
    TokenUsage,
    ToolCall,
    Turn,
    TurnReason,
    TurnStatus,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.errors import NoModelConfigured
from openvaala_lsp.providers import base as provider_events
from openvaala_lsp.providers.base import Provider, ProviderError, ToolSpec
from openvaala_lsp.providers.errors import CONTEXT_LENGTH_EXCEEDED
from openvaala_lsp.runtime import catalog, compaction, context, model_calls
from openvaala_lsp.runtime.accounting import SessionUsage
from openvaala_lsp.runtime.approvals import Approvals
from openvaala_lsp.runtime.hosts import SessionHost
from openvaala_lsp.runtime.input_queue import InputQueue
from openvaala_lsp.runtime.model_clients import resolve_model
from openvaala_lsp.runtime.session_hooks import SessionHooks
from openvaala_lsp.runtime.streaming import TurnItems
from openvaala_lsp.runtime.tool_calls import CallGate, run_tool_calls
from openvaala_lsp.telemetry.base import NOTHING, ModelCallSpan, TurnSpan

logger = logging.getLogger(__name__)

# while the turn's last commit is under way, this many characters of the answer are read on (a tool
# call, a short answer: the tool runs without waiting for the commit), then the turn waits for it
READ_AHEAD_CHARS = 4096
YIELD_SECONDS = 0.002  # the longest a model stream keeps the event loop to itself

MAX_STOP_CONTINUATIONS = 3
HOOK_BLOCKED = "hookBlocked"


class TurnOwner(Protocol):
    """What the loop needs from the session that runs the turn."""

    @property
    def session(self) -> Session: ...

    @property
    def host(self) -> SessionHost: ...

    @property
    def queue(self) -> InputQueue: ...

    @property
    def usage(self) -> SessionUsage: ...

    @property
    def approvals(self) -> Approvals: ...

    def publish(self, event: Any) -> None: ...

    def set_state(self, state: SessionState) -> None: ...

    def saved(self, ordinal: int, item: Item, *, remembered: bool = False) -> None:
        """An item is in the log now: the history grows (unless `remember` did it already) and
        subscribers hear `itemCompleted`."""

    def remember(self, item: Item) -> None:
        """The item is part of the history the next request sends (its commit is under way)."""

    async def history(self) -> list[Item]: ...

    async def session_context(self, history: Sequence[Item], turn: Turn, hooks: SessionHooks) -> list[str]:
        """Context from the sessionStart hooks, which fire once per session and runtime."""

    def instructions(self, definitions: Definitions) -> str: ...

    def announce(self, active: ActiveTurn) -> None:
        """The turn is saved: subscribers hear that it started (once)."""


TurnWork = Callable[["TurnOwner", "ActiveTurn", list[PendingInput]], Awaitable[None]]
"""What a turn does (`execute`, or `compaction_turn`): it leaves its outcome in the turn."""


@attrs.define(eq=False)
class ActiveTurn:
    turn: Turn
    definitions: Definitions
    model: ModelDefinition
    items: TurnItems
    hooks: SessionHooks  # the hooks of the definitions the turn started with
    trace: TurnSpan = NOTHING  # the turn's span, holding those of its calls, hooks and compactions
    task: asyncio.Task[None] | None = None
    interrupting: bool = False
    context: list[str] = attrs.Factory(list)  # hook-added context for this turn's requests
    # until the turn has recorded its inputs an interrupt only marks it: the inputs belong to the turn;
    # but it stops their userPromptSubmit hooks, which may run for long (`checking`)
    committed: bool = False
    checking: bool = False
    auto_compacted: bool = False  # automatic compaction runs at most once per turn
    request_tokens: int = 0  # the estimated size of the request being made
    overflow_retried: bool = False  # a context-length error gets one compaction and one retry
    announced: bool = False  # turnStarted is published
    # how it ends (`endings.reason_for`): who stopped it, what ended the loop (a hook, a limit), and
    # why the model's last answer stopped
    stopped_by: TurnReason | None = None
    ended_by: TurnReason | None = None
    finish_reason: str | None = None
    # the inputs it took are durable: in its first commit, or (never recorded) back in the queue
    inputs_saved: asyncio.Future[None] = attrs.Factory(lambda: _unwatched_future())

    def inputs_in(self, commit: asyncio.Future[None]) -> None:
        """`inputs_saved` ends as the commit that holds the turn's inputs does."""
        commit.add_done_callback(
            lambda done: self.inputs_done(asyncio.CancelledError() if done.cancelled() else done.exception())
        )

    def inputs_done(self, error: BaseException | None = None) -> None:
        saved = self.inputs_saved
        if saved.done():
            return
        if isinstance(error, asyncio.CancelledError):
            saved.cancel()
        elif error is not None:
            saved.set_exception(error)
        else:
            saved.set_result(None)


def _unwatched_future() -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    # only a submit that started the turn awaits it: a failure nobody awaits is no error to log
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
    return future


def fail_internally(turn: Turn, exc: Exception, log_message: str) -> None:
    """An unexpected exception (a bug, a broken store) ends the turn `failed`, with its traceback
    in the log."""
    logger.exception(log_message, turn.id)
    turn.status = TurnStatus.FAILED
    turn.error = ErrorInfo(kind="internal", message=f"{type(exc).__name__}: {exc}")


async def execute(owner: TurnOwner, active: ActiveTurn, inputs: list[PendingInput]) -> None:
    """Runs the turn to its end, leaving its outcome in `active.turn` (status, error); never raises
    but for the runtime itself going away."""
    turn = active.turn
    try:
        if _has_hooks(active, "userPromptSubmit"):  # what they report comes after the turn's start
            await owner.host.storage.flush()
            owner.announce(active)
        decided, blocked = await _check_prompts(owner, active, inputs)
        # the first model request goes out while the inputs commit; they show saved once committed
        await record_inputs(owner, active, decided, wait=False)
        active.committed = True
        if active.interrupting:
            raise asyncio.CancelledError
        if blocked:
            turn.status = TurnStatus.FAILED
            turn.error = ErrorInfo(kind=HOOK_BLOCKED, message="\n\n".join(blocked))
        else:
            await _loop(owner, active)
            turn.status = TurnStatus.COMPLETED
    except asyncio.CancelledError:
        turn.status = TurnStatus.INTERRUPTED
    except ProviderError as exc:
        turn.status = TurnStatus.FAILED
        turn.error = ErrorInfo(kind=exc.kind, message=exc.message)
    except Exception as exc:
        fail_internally(turn, exc, "turn %s failed")


async def _check_prompts(
    owner: TurnOwner, active: ActiveTurn, inputs: list[PendingInput]
) -> tuple[list[tuple[PendingInput, ItemStatus]], list[str]]:
    """Each input as its userPromptSubmit hooks decide, and why those blocked were: a blocked prompt
    stays in the history, marked withdrawn, never sent to the model. An interrupt stops the hooks
    (`checking`): the inputs they had not passed are withdrawn too, and the turn records them, then
    ends interrupted."""
    blocked: list[str] = []
    decided: list[tuple[PendingInput, ItemStatus]] = []
    active.checking = True
    try:
        for pending in inputs:
            prompt = await active.hooks.fire("userPromptSubmit", {"prompt": context.item_text(pending.item)})
            active.context += prompt.additional_context
            if prompt.blocked:
                blocked.append(prompt.reason or "blocked by a hook")
            decided.append((pending, ItemStatus.WITHDRAWN if prompt.blocked else ItemStatus.COMPLETED))
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if owner.host.closed or current is None:  # the runtime stops: the inputs stay queued
            raise
        current.uncancel()  # the interrupt is handled here; the turn ends once they are recorded
        decided += [(pending, ItemStatus.WITHDRAWN) for pending in inputs[len(decided) :]]
    finally:
        active.checking = False
    return decided, blocked


async def record_inputs(
    owner: TurnOwner, active: ActiveTurn, inputs: list[tuple[PendingInput, ItemStatus]], *, wait: bool = True
) -> None:
    """Moves inputs from the queue into the log as part of the turn, in one commit with whatever the
    turn queued before (its own row, when it starts); once it is done the turn and the inputs are
    announced (waited for unless `wait` is false). The inputs are in the history at once."""
    storage = owner.host.storage
    recorded = []
    for pending, status in inputs:
        item = attrs.evolve(pending.item, turn_id=active.turn.id, status=status)
        recorded.append((item, await storage.append_item(item, input_id=pending.input_id)))
        await owner.queue.recorded(pending)
        owner.remember(item)

    def report() -> None:
        owner.announce(active)
        for item, ordinal in recorded:
            owner.publish(events.PendingInputRemoved(item_id=item.id, reason="taken"))
            owner.saved(ordinal, item, remembered=True)

    committing = active.items.defer(report)
    assert committing is not None
    active.inputs_in(committing)
    if wait:
        await active.items.settle()


async def _loop(owner: TurnOwner, active: ActiveTurn) -> None:
    host, session = owner.host, owner.session
    await host.start_mcp(active.definitions, session.agent_name, wait=True)
    history = await owner.history()
    if _has_hooks(active, "sessionStart"):  # what they report comes after the turn's inputs
        await active.items.settle()
    session_context = await owner.session_context(history, active.turn, active.hooks)
    instructions = "\n\n".join([owner.instructions(active.definitions), *session_context])
    provider: Provider | None = None
    stop_continuations = 0
    agent = catalog.configured_agent(active.definitions, session.agent_name)
    while True:
        steered = owner.queue.claim_steering(active.turn.id)
        if steered:
            await record_inputs(owner, active, [(pending, ItemStatus.COMPLETED) for pending in steered])
        model = _current_model(owner, active)  # setSessionModel takes effect at the next model call
        if provider is None or model is not active.model:
            active.model = model
            provider = await host.provider(model)
        # tools are taken at each call: an MCP server that became ready or changed its list joins in
        tools = host.tools(active.definitions, session)
        by_name = {tool.name: tool for tool in tools}
        specs = context.tool_specs(tools)
        system = "\n\n".join([instructions, *active.context])
        if not active.auto_compacted and _over_threshold(owner, model, system, specs, await owner.history()):
            await active.items.settle()
            active.auto_compacted = True
            await compaction.compact(owner, active, CompactionTrigger.AUTO)
        history = await owner.history()
        active.request_tokens = context.estimate_request(system, specs, history)
        request = context.build_request(
            model.ref.name,
            system,
            history,
            specs,
            max_output_tokens=model.max_output_tokens,
            reasoning_effort=session.model.reasoning_effort,
        )
        try:
            # aclosing: a stream left early (error, interrupt) closes its connection at once
            async with contextlib.aclosing(provider.stream(request)) as stream:  # type: ignore[type-var]
                calls = await _call_model(owner, active, stream, active.trace.model_call(model, request))
        except ProviderError as exc:
            if exc.kind != CONTEXT_LENGTH_EXCEEDED or active.overflow_retried or active.items.streaming:
                raise
            active.overflow_retried = active.auto_compacted = True
            outcome = await compaction.compact(owner, active, CompactionTrigger.OVERFLOW)
            if not outcome.compacted:
                raise
            continue  # the same call once more, with the compacted context
        if not calls:
            history = await owner.history()
            last = next((i for i in reversed(history) if i.type == ItemType.ASSISTANT_MESSAGE), None)
            text = context.item_text(last) if last is not None else ""
            payload = {"stop_hook_active": stop_continuations > 0, "last_assistant_message": text}
            stopping = await active.hooks.fire("stop", payload)
            if not stopping.blocked or stopping.stop:
                return
            if stop_continuations >= MAX_STOP_CONTINUATIONS:
                active.ended_by = TurnReason.LIMIT_REACHED  # the hook would keep it going: the limit ends it
                return
            # a blocking stop hook keeps the agent going, with its reason as the next message
            stop_continuations += 1
            await active.items.append(_hook_message(active.turn, stopping.reason or "continue"))
            continue
        gate = CallGate(agent=agent, host=host, approvals=owner.approvals)
        if await run_tool_calls(
            calls,
            by_name,
            active.items,
            active.hooks,
            gate,
            host.tool_context(active.definitions, agent),
            trace=active.trace,
        ):
            active.ended_by = TurnReason.CANCELLED_BY_HOOK  # a hook said `continue: false`
            return


def _has_hooks(active: ActiveTurn, event: str) -> bool:
    return any(hook.event == event for hook in active.definitions.hooks)


def _current_model(owner: TurnOwner, active: ActiveTurn) -> ModelDefinition:
    """The session's model now; the turn's until then if the definitions no longer have one."""
    try:
        model = resolve_model(active.definitions, owner.session.model, owner.session.agent_name)
    except NoModelConfigured:
        return active.model
    return active.model if model == active.model else model


def _over_threshold(
    owner: TurnOwner, model: ModelDefinition, system: str, specs: list[ToolSpec], history: list[Item]
) -> bool:
    """Whether the next request would pass the model's compaction threshold: the last call's actual
    size plus what was added since, or an estimate of the whole before any call."""
    limit = compaction.threshold(model)
    projected = owner.usage.next_request(history, model.context_window)
    if projected.source is ContextUsageSource.UNKNOWN:
        return limit > 0 and context.estimate_request(system, specs, history) > limit
    return limit > 0 and projected.tokens > limit


async def compaction_turn(owner: TurnOwner, active: ActiveTurn, inputs: list[PendingInput]) -> None:
    """A turn of compactContext: it compacts the context, and does nothing else."""
    turn = active.turn
    active.committed = True
    try:
        await record_inputs(owner, active, [])  # the turn's row, committed; the turn announced
        outcome = await compaction.compact(owner, active, CompactionTrigger.MANUAL)
        turn.status = TurnStatus.COMPLETED if outcome.compacted else TurnStatus.FAILED
        turn.error = outcome.error
    except asyncio.CancelledError:
        turn.status = TurnStatus.INTERRUPTED
    except Exception as exc:
        fail_internally(turn, exc, "compaction turn %s failed")


async def _call_model(
    owner: TurnOwner, active: ActiveTurn, stream: AsyncIterator[Any], span: ModelCallSpan
) -> list[int]:
    """Streams one model response into items and saves them, but for the tool calls it made: their
    itemIndexes are returned, still streaming."""
    turn, model, items = active.turn, active.model, active.items
    record = model_calls.new_record(
        turn,
        model,
        owner.host.workspace_root(),
        ModelCallPurpose.TURN,
        context_window=model.context_window,
        context_tokens=active.request_tokens,
    )
    started = time.monotonic()
    text_index: int | None = None
    reasoning_index: int | None = None
    tool_indexes: dict[int, int] = {}  # provider's tool call index -> itemIndex
    completed: provider_events.Completed | None = None
    loop = asyncio.get_running_loop()
    yielded = -math.inf
    # what the turn has not committed yet (a quick tool's call and result) goes at this task's first
    # suspension: on a kept-alive connection, once the request is written (so the commit does not
    # slow the request down); the answer's first events are read meanwhile, held behind that
    # commit's reports (and the turn's inputs', usually done by now): `TurnItems.publish`
    loop.call_soon(items.commit)
    read_ahead = 0  # characters read while that commit is under way
    try:
        async for event in stream:
            if record.first_token_ms is None:
                record.first_token_ms = int((time.monotonic() - started) * 1000)
                items.check()
            if isinstance(event, provider_events.TextDelta):
                if text_index is None:
                    text_index = items.start_text(ItemType.ASSISTANT_MESSAGE)
                items.append_text(text_index, event.text)
            elif isinstance(event, provider_events.ReasoningDelta):
                if reasoning_index is None:
                    reasoning_index = items.start_text(ItemType.REASONING)
                items.append_text(reasoning_index, event.text)
            elif isinstance(event, provider_events.ReasoningDone):
                if reasoning_index is None:
                    reasoning_index = items.start(ItemType.REASONING, content=[])
                item = items.streaming[reasoning_index]
                item.provider_data = (item.provider_data or []) + [event.data]
            elif isinstance(event, provider_events.ToolCallStarted):
                call = ToolCall(call_id=event.call_id, name=event.name, arguments="")
                tool_indexes[event.index] = items.start(ItemType.TOOL_CALL, tool_call=call)
            elif isinstance(event, provider_events.ToolCallDelta):
                index = tool_indexes.get(event.index)
                if index is not None:
                    items.append_arguments(index, event.arguments)
            elif isinstance(event, provider_events.ToolCallDone):
                index = tool_indexes.get(event.index)
                if index is None:
                    index = tool_indexes[event.index] = items.start(
                        ItemType.TOOL_CALL, tool_call=attrs.evolve(event.call, arguments="")
                    )
                item = items.streaming[index]
                assert item.tool_call is not None
                missing = event.call.arguments[len(item.tool_call.arguments) :]
                if event.call.arguments.startswith(item.tool_call.arguments) and missing:
                    items.append_arguments(index, missing)
                else:
                    item.tool_call.arguments = event.call.arguments
            elif isinstance(event, provider_events.Completed):
                completed = event
            if items.deferred:
                read_ahead += len(provider_events.delta_text(event))
                if read_ahead > READ_AHEAD_CHARS:
                    # a long answer waits for the commit its events wait for: reading on would starve
                    # the storage's threads of the GIL (a 4 ms commit took ~280 ms beside a busy
                    # event loop, measured)
                    await items.settle()
            if loop.time() - yielded > YIELD_SECONDS:
                # a stream read behind the model comes a socket buffer at a time without suspending:
                # let the editor's notifications (and everyone else) out after the first event and
                # every few ms after
                await asyncio.sleep(0)
                yielded = loop.time()
    except BaseException as exc:
        record.error = model_calls.failure(exc)
        record.latency_ms = int((time.monotonic() - started) * 1000)
        await items.settle()  # a call that failed before any answer: the turn is announced first
        await _account(owner, active, record, completed.usage if completed is not None else None)
        span.finish(record, None, [items.streaming[index] for index in items.unsaved()])
        await owner.host.storage.append_model_call(record)
        raise
    record.latency_ms = int((time.monotonic() - started) * 1000)
    active.finish_reason = completed.finish_reason if completed is not None else None
    await _account(owner, active, record, completed.usage if completed is not None else None)
    # tool calls stay streaming until they are decided (they may wait for the user's approval): each
    # is saved whole as it waits; the other items commit with what comes next: the calls, or the
    # turn's end (one commit, not two)
    produced = items.unsaved()
    span.finish(record, active.finish_reason, [items.streaming[index] for index in produced])
    calls = [index for index in produced if items.streaming[index].type == ItemType.TOOL_CALL]
    for index in calls:
        items.keep(index)
    await items.complete_many([i for i in produced if i not in calls], ItemStatus.COMPLETED, later=True, now=False)
    await owner.host.storage.append_model_call(record)  # after the items: it need not hold up their commit
    return calls


async def _account(owner: TurnOwner, active: ActiveTurn, record: ModelCall, reported: TokenUsage | None) -> None:
    active.items.check()
    history = await owner.history()
    # a call that failed before any answer (an HTTP error, a refused connection) used no tokens
    answered = reported is not None or record.first_token_ms is not None
    # this call's items (those of calls before it may still wait for their report: in the history)
    produced = [active.items.streaming[index] for index in active.items.unsaved()]
    window = active.model.context_window
    owner.usage.record(record, reported, history, produced, window, sent=active.request_tokens, answered=answered)
    active.turn.usage = active.turn.usage + record.usage
    active.items.publish(events.UsageUpdated(usage=owner.usage.usage))
    active.items.publish(events.ContextUsageUpdated(context=owner.usage.context))


def _hook_message(turn: Turn, text: str) -> Item:
    """What a blocking stop hook says, as the next user message of the turn."""
    return Item(
        id=new_id("item"),
        conversation_id=turn.conversation_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        type=ItemType.USER_MESSAGE,
        created_at=utcnow(),
        content=[Content(type="text", text=text)],
        from_=Address(kind=AddressKind.HOOK, name="stop"),
    )
