"""A session of an open conversation: its pending inputs, its running turn, its subscribers.

State changes happen synchronously on the event loop and are published in the same step, so a
subscriber's snapshot (last saved ordinal, pending inputs, streaming items) plus the events after it
describe the session exactly. Storage writes happen before the events that report them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import attrs

from openvaala_lsp.definitions import Definitions, ModelDefinition
from openvaala_lsp.hooks import HookOutcome, HookRunner
from openvaala_lsp.model import (
    Address,
    AddressKind,
    Content,
    ContextUsage,
    ContextUsageSource,
    ErrorInfo,
    Item,
    ItemStatus,
    ItemType,
    ModelCall,
    PendingInput,
    Session,
    SessionInputMode,
    SessionRuntimeInfo,
    SessionState,
    TokenUsage,
    ToolCall,
    ToolResult,
    Turn,
    TurnStatus,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.api import PendingInputInfo, StreamingItem
from openvaala_lsp.protocol.errors import InvalidState, NotFound
from openvaala_lsp.providers import base as provider_events
from openvaala_lsp.providers.base import ProviderError
from openvaala_lsp.runtime import context
from openvaala_lsp.runtime.models import resolve_model
from openvaala_lsp.runtime.skills import agent_skills, skills_prompt
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.tools.base import Tool, ToolOutput

if TYPE_CHECKING:
    from openvaala_lsp.runtime.conversation import OpenConversation

logger = logging.getLogger(__name__)

DEFAULT_INSTRUCTIONS = (
    "You are openvaala, a coding agent working in the user's project. Use the tools to inspect and "
    "change files and to run commands; paths are relative to the working directory {directory}. "
    "Be concise and report what you did."
)
INTERRUPTED_TOOL_TEXT = "[interrupted: the tool was stopped]"
MAX_STOP_CONTINUATIONS = 3
HOOK_BLOCKED = "hookBlocked"
HOOK_FAILED = "hookFailed"


@attrs.define(eq=False)
class ActiveTurn:
    turn: Turn
    definitions: Definitions
    task: asyncio.Task[None] | None = None
    streaming: dict[int, Item] = attrs.Factory(dict)  # itemIndex -> item being produced
    next_index: int = 0
    interrupting: bool = False
    context: list[str] = attrs.Factory(list)  # hook-added context for this turn's requests
    hooks: HookRunner = attrs.Factory(lambda: HookRunner([]))  # the hooks of the definitions it started with
    # until the turn has recorded its inputs an interrupt only marks it: the inputs belong to the turn
    committed: bool = False


class SessionRunner:
    def __init__(self, conversation: OpenConversation, session: Session) -> None:
        self.conversation = conversation
        self.session = session
        self.state = SessionState.IDLE
        self.pending: list[PendingInput] = []
        self.taken: set[str] = set()  # pending item ids already claimed by a starting turn
        self.input_ids: dict[str, str] = {}  # inputId -> item id, for idempotent submits
        self.active: ActiveTurn | None = None
        self.last_turn: Turn | None = None
        self.subscribers: set[Subscription] = set()
        self.usage = TokenUsage()
        self.context_usage = ContextUsage()
        self.history: list[Item] | None = None  # the session's saved items, loaded on first turn
        self._last_call: tuple[ModelCall, int] | None = None  # last call and history length then
        self._session_started = False  # sessionStart fires on this runtime's first turn of the session
        self._session_context: list[str] = []

    # Views

    @property
    def busy(self) -> bool:
        return self.active is not None or any(p.item.id not in self.taken for p in self.pending)

    def runtime_info(self) -> SessionRuntimeInfo:
        turn = self.active.turn if self.active else None
        return SessionRuntimeInfo(
            session=self.session,
            state=self.state,
            active_turn_id=turn.id if turn else None,
            active_turn_model=self.session.model if turn else None,
            last_turn_id=self.last_turn.id if self.last_turn else None,
            last_turn_status=self.last_turn.status if self.last_turn else None,
            context=self.context_usage,
            usage=self.usage,
        )

    def pending_infos(self) -> list[PendingInputInfo]:
        return [PendingInputInfo(item=p.item, mode=p.mode, turn_id=p.turn_id) for p in self.pending]

    def streaming_items(self) -> list[StreamingItem]:
        if self.active is None:
            return []
        return [StreamingItem(item_index=i, item=item) for i, item in sorted(self.active.streaming.items())]

    # Publishing

    def publish(self, event: Any) -> None:
        for sub in list(self.subscribers):
            sub.publish(event)

    def _set_state(self, state: SessionState) -> None:
        self.state = state
        self.publish(events.StateChanged(state=state))
        self.conversation.session_changed(self)

    # Inputs

    async def add_input(self, pending: PendingInput) -> None:
        """Durably records an input, then queues, steers or interrupts with it."""
        if pending.mode == SessionInputMode.STEER and self.active is not None:
            pending.turn_id = self.active.turn.id
        await self.conversation.storage.save_pending_input(pending)
        self.pending.append(pending)
        self.publish(events.PendingInputAdded(item=copy.deepcopy(pending.item), mode=pending.mode.value))
        self.conversation.session_changed(self)
        if pending.mode == SessionInputMode.INTERRUPT and self.active is not None:
            self.interrupt()
        self.maybe_start()

    def find_pending(self, item_id: str) -> PendingInput:
        for pending in self.pending:
            if pending.item.id == item_id:
                if item_id in self.taken:
                    raise InvalidState(f"input already taken into a turn: {item_id}")
                return pending
        raise NotFound(f"pending input not found: {item_id}")

    async def steer(self, item_id: str, turn_id: str) -> None:
        pending = self.find_pending(item_id)
        if self.active is None or self.active.turn.id != turn_id:
            raise InvalidState(f"turn {turn_id} is not running")
        pending.mode = SessionInputMode.STEER
        pending.turn_id = turn_id
        await self.conversation.storage.save_pending_input(pending)

    async def withdraw(self, item_id: str) -> Item:
        pending = self.find_pending(item_id)
        self.pending.remove(pending)
        await self.conversation.storage.remove_pending_input(self.session.conversation_id, item_id)
        pending.item.status = ItemStatus.WITHDRAWN
        self.publish(events.PendingInputRemoved(item_id=item_id, reason="withdrawn"))
        self.conversation.session_changed(self)
        return pending.item

    async def interrupt_with(self, item_id: str, turn_id: str) -> None:
        pending = self.find_pending(item_id)
        if self.active is None or self.active.turn.id != turn_id:
            raise InvalidState(f"turn {turn_id} is not running")
        # the input runs first in the next turn
        self.pending.remove(pending)
        self.pending.insert(0, pending)
        pending.mode = SessionInputMode.QUEUE
        self.interrupt()

    def interrupt(self) -> str:
        """Stops the running turn now; it ends `interrupted`, keeping what streamed so far."""
        if self.active is None or self.active.task is None:
            raise InvalidState("no turn is running")
        self.active.interrupting = True
        if self.active.committed:
            self.active.task.cancel()
        return self.active.turn.id

    # Turns

    def maybe_start(self) -> None:
        """Starts a turn with every pending input when the session is idle."""
        if self.active is not None or self.conversation.closed:
            return
        inputs = [p for p in self.pending if p.item.id not in self.taken]
        if not inputs:
            return
        definitions = self.conversation.definitions()
        try:
            model = resolve_model(definitions, self.session.model, self.session.agent_name)
        except Exception:
            return  # submit checked this; definitions changed since: the inputs wait
        turn = Turn(
            id=new_id("turn"),
            conversation_id=self.session.conversation_id,
            session_id=self.session.id,
            started_at=utcnow(),
            model=model.ref,
        )
        self.taken.update(p.item.id for p in inputs)
        active = ActiveTurn(
            turn=turn, definitions=definitions, hooks=self.conversation.runtime.source.hooks(definitions)
        )
        self.active = active
        active.task = asyncio.get_running_loop().create_task(self._run(active, inputs, model))

    async def _run(self, active: ActiveTurn, inputs: list[PendingInput], model: ModelDefinition) -> None:
        turn = active.turn
        storage = self.conversation.storage
        try:
            if self.session.model.model is None:  # created before any model was configured
                self.session.model = attrs.evolve(self.session.model, model=model.ref)
                await storage.update_session(self.session)
            await storage.save_turn(turn, durable=True)
            await self.conversation.storage.touch_conversation(turn.conversation_id, turn.started_at)
            self.publish(events.TurnStarted(turn=copy.deepcopy(turn)))
            self._set_state(SessionState.RUNNING)
            blocked: list[str] = []
            for pending in inputs:
                prompt = await self._hook("userPromptSubmit", {"prompt": context.item_text(pending.item)})
                active.context += prompt.additional_context
                if prompt.blocked:
                    blocked.append(prompt.reason or "blocked by a hook")
                # a blocked prompt stays in the history, marked withdrawn: never sent to the model
                await self._commit_input(pending, turn.id, ItemStatus.WITHDRAWN if prompt.blocked else None)
            active.committed = True
            if active.interrupting:
                raise asyncio.CancelledError
            if blocked:
                turn.status = TurnStatus.FAILED
                turn.error = ErrorInfo(kind=HOOK_BLOCKED, message="\n\n".join(blocked))
            else:
                await self._loop(active, model)
                turn.status = TurnStatus.COMPLETED
        except asyncio.CancelledError:
            turn.status = TurnStatus.INTERRUPTED
        except ProviderError as exc:
            turn.status = TurnStatus.FAILED
            turn.error = ErrorInfo(kind=exc.kind, message=exc.message)
        except Exception as exc:
            logger.exception("turn %s failed", turn.id)
            turn.status = TurnStatus.FAILED
            turn.error = ErrorInfo(kind="internal", message=f"{type(exc).__name__}: {exc}")
        await self._finish(active)

    async def _finish(self, active: ActiveTurn) -> None:
        turn = active.turn
        # items still streaming keep what they have, marked interrupted
        for index in sorted(active.streaming):
            await self._complete_item(active, index, ItemStatus.INTERRUPTED)
        for pending in [p for p in self.pending if p.item.id in self.taken]:
            # claimed but never committed (interrupted before): back to the queue
            self.taken.discard(pending.item.id)
        turn.ended_at = utcnow()
        await self.conversation.storage.save_turn(turn, durable=True)
        await self.conversation.storage.touch_conversation(turn.conversation_id, turn.ended_at)
        if turn.error is not None:
            self.publish(events.ErrorEvent(error=turn.error))
        self.publish(events.TurnCompleted(turn=copy.deepcopy(turn)))
        self.active = None
        self.last_turn = turn
        self._set_state(SessionState.IDLE)
        self.conversation.turn_ended(self)
        if turn.status != TurnStatus.FAILED:
            self.maybe_start()

    async def _commit_input(self, pending: PendingInput, turn_id: str, status: ItemStatus | None = None) -> None:
        item = attrs.evolve(pending.item, turn_id=turn_id, status=status or ItemStatus.COMPLETED)
        ordinal = await self.conversation.storage.append_item(item, input_id=pending.input_id, durable=True)
        await self.conversation.storage.remove_pending_input(self.session.conversation_id, item.id)
        if pending in self.pending:
            self.pending.remove(pending)
        self.taken.discard(item.id)
        self.publish(events.PendingInputRemoved(item_id=item.id, reason="taken"))
        self._saved(ordinal, item)

    def _saved(self, ordinal: int, item: Item) -> None:
        self.conversation.last_ordinal = max(self.conversation.last_ordinal, ordinal)
        if self.history is not None:
            self.history.append(item)
        self.publish(events.ItemCompleted(ordinal=ordinal, item=item))

    async def _history(self) -> list[Item]:
        if self.history is None:
            self.history = await self.conversation.load_history(self.session.id)
        return self.history

    # The agent loop: call the model, stream, run its tool calls, repeat until it stops

    async def _loop(self, active: ActiveTurn, model: ModelDefinition) -> None:
        await self.conversation.start_mcp(active.definitions, self.session.agent_name, wait=True)
        history = await self._history()
        if not self._session_started:
            self._session_started = True
            source = "resume" if any(item.turn_id != active.turn.id for item in history) else "startup"
            started = await self._hook("sessionStart", {"source": source}, match=source)
            self._session_context = started.additional_context
        instructions = "\n\n".join([self.instructions(active.definitions), *self._session_context])
        provider = await self.conversation.provider(model)
        stop_continuations = 0
        while True:
            for pending in [
                p for p in self.pending if p.mode == SessionInputMode.STEER and p.turn_id == active.turn.id
            ]:
                self.taken.add(pending.item.id)
                await self._commit_input(pending, active.turn.id)
            # tools are taken at each call: an MCP server that became ready or changed its list joins in
            tools = self.conversation.tools(active.definitions, self.session.agent_name)
            by_name = {tool.name: tool for tool in tools}
            request = context.build_request(
                model.ref.name,
                "\n\n".join([instructions, *active.context]),
                await self._history(),
                context.tool_specs(tools),
                max_output_tokens=model.max_output_tokens,
                reasoning_effort=self.session.model.reasoning_effort,
            )
            # aclosing: a stream left early (error, interrupt) closes its connection at once
            async with contextlib.aclosing(provider.stream(request)) as stream:  # type: ignore[type-var]
                calls = await self._call_model(active, model, stream)
            if not calls:
                last = next((i for i in reversed(self.history or []) if i.type == ItemType.ASSISTANT_MESSAGE), None)
                payload = {"stop_hook_active": stop_continuations > 0, "last_assistant_message": _text(last)}
                stopping = await self._hook("stop", payload)
                if not stopping.blocked or stopping.stop or stop_continuations >= MAX_STOP_CONTINUATIONS:
                    return
                # a blocking stop hook keeps the agent going, with its reason as the next message
                stop_continuations += 1
                await self._hook_message(active, stopping.reason or "continue")
                continue
            for call_item in calls:
                assert call_item.tool_call is not None
                if await self._run_tool(active, call_item.tool_call, by_name):
                    return  # a hook said `continue: false`

    async def _call_model(self, active: ActiveTurn, model: ModelDefinition, stream: Any) -> list[Item]:
        turn = active.turn
        record = ModelCall(
            id=new_id("call"),
            conversation_id=turn.conversation_id,
            session_id=turn.session_id,
            turn_id=turn.id,
            provider=model.ref.provider,
            model=model.ref.name,
            started_at=utcnow(),
            workspace=self.conversation.workspace_root(),
        )
        started = time.monotonic()
        text_index: int | None = None
        reasoning_index: int | None = None
        tool_indexes: dict[int, int] = {}  # provider's tool call index -> itemIndex
        completed: provider_events.Completed | None = None
        try:
            async for event in stream:
                if record.first_token_ms is None:
                    record.first_token_ms = int((time.monotonic() - started) * 1000)
                if isinstance(event, provider_events.TextDelta):
                    if text_index is None:
                        text_index = self._start_item(
                            active, ItemType.ASSISTANT_MESSAGE, content=[Content(type="text", text="")]
                        )
                    self._append_text(active, text_index, event.text)
                elif isinstance(event, provider_events.ReasoningDelta):
                    if reasoning_index is None:
                        reasoning_index = self._start_item(
                            active, ItemType.REASONING, content=[Content(type="text", text="")]
                        )
                    self._append_text(active, reasoning_index, event.text)
                elif isinstance(event, provider_events.ReasoningDone):
                    if reasoning_index is None:
                        reasoning_index = self._start_item(active, ItemType.REASONING, content=[])
                    item = active.streaming[reasoning_index]
                    item.provider_data = (item.provider_data or []) + [event.data]
                elif isinstance(event, provider_events.ToolCallStarted):
                    call = ToolCall(call_id=event.call_id, name=event.name, arguments="")
                    tool_indexes[event.index] = self._start_item(active, ItemType.TOOL_CALL, tool_call=call)
                elif isinstance(event, provider_events.ToolCallDelta):
                    index = tool_indexes.get(event.index)
                    if index is not None:
                        self._append_arguments(active, index, event.arguments)
                elif isinstance(event, provider_events.ToolCallDone):
                    index = tool_indexes.get(event.index)
                    if index is None:
                        index = tool_indexes[event.index] = self._start_item(
                            active, ItemType.TOOL_CALL, tool_call=attrs.evolve(event.call, arguments="")
                        )
                    item = active.streaming[index]
                    assert item.tool_call is not None
                    missing = event.call.arguments[len(item.tool_call.arguments) :]
                    if event.call.arguments.startswith(item.tool_call.arguments) and missing:
                        self._append_arguments(active, index, missing)
                    else:
                        item.tool_call.arguments = event.call.arguments
                elif isinstance(event, provider_events.Completed):
                    completed = event
        except BaseException as exc:
            record.error = "interrupted" if isinstance(exc, asyncio.CancelledError) else f"{type(exc).__name__}: {exc}"
            raise
        finally:
            record.latency_ms = int((time.monotonic() - started) * 1000)
            await self._account(record, completed, model)
        calls: list[Item] = []
        for index in sorted(active.streaming):
            item = await self._complete_item(active, index, ItemStatus.COMPLETED)
            if item.type == ItemType.TOOL_CALL:
                calls.append(item)
        return calls

    async def _account(
        self, record: ModelCall, completed: provider_events.Completed | None, model: ModelDefinition
    ) -> None:
        history = self.history or []
        if completed is not None and completed.usage is not None:
            record.usage = completed.usage
        else:
            # the provider reported nothing (llama.cpp streams, cut streams): estimate it
            record.usage_estimated = True
            prompt = sum(context.estimate_item(item) for item in history)
            output = sum(
                context.estimate_item(item) for item in (self.active.streaming.values() if self.active else ())
            )
            record.usage = TokenUsage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)
        await self.conversation.record_call(record)
        self.usage = self.usage + record.usage
        if self.active is not None:
            self.active.turn.usage = self.active.turn.usage + record.usage
        self._last_call = (record, len(history))
        self.context_usage = ContextUsage(
            source=ContextUsageSource.ESTIMATED if record.usage_estimated else ContextUsageSource.ACTUAL,
            tokens=record.usage.input_tokens + record.usage.output_tokens,
            window=model.context_window,
        )
        self.publish(events.UsageUpdated(usage=self.usage))
        self.publish(events.ContextUsageUpdated(context=self.context_usage))

    def next_request_usage(self, window: int) -> ContextUsage:
        """Context the next request will use: the last call's actual usage plus estimates of what
        was added since; `unknown` before any call."""
        if self._last_call is None:
            return ContextUsage(source=ContextUsageSource.UNKNOWN, tokens=0, window=window)
        record, seen = self._last_call
        added = sum(context.estimate_item(item) for item in (self.history or [])[seen:])
        base = record.usage.input_tokens + record.usage.output_tokens
        source = ContextUsageSource.ACTUAL if not added and not record.usage_estimated else ContextUsageSource.ESTIMATED
        return ContextUsage(source=source, tokens=base + added, window=window)

    @property
    def last_call(self) -> ModelCall | None:
        return self._last_call[0] if self._last_call else None

    # Streaming items

    def _start_item(self, active: ActiveTurn, kind: ItemType, **fields: Any) -> int:
        index = active.next_index
        active.next_index += 1
        item = Item(
            id=new_id("item"),
            conversation_id=self.session.conversation_id,
            session_id=self.session.id,
            turn_id=active.turn.id,
            type=kind,
            status=ItemStatus.STREAMING,
            created_at=utcnow(),
            **fields,
        )
        active.streaming[index] = item
        self.publish(events.ItemStarted(item_index=index, item=copy.deepcopy(item)))
        return index

    def _append_text(self, active: ActiveTurn, index: int, text: str) -> None:
        item = active.streaming[index]
        assert item.content
        item.content[0].text = (item.content[0].text or "") + text
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=text))

    def _append_arguments(self, active: ActiveTurn, index: int, fragment: str) -> None:
        item = active.streaming[index]
        assert item.tool_call is not None
        item.tool_call.arguments += fragment
        self.publish(events.ItemDelta(item_index=index, item_id=item.id, delta=fragment))

    async def _complete_item(self, active: ActiveTurn, index: int, status: ItemStatus) -> Item:
        item = active.streaming[index]
        item.status = status
        ordinal = await self.conversation.storage.append_item(item, durable=True)
        # removed from the streaming set and reported saved in one step: snapshots stay exact
        del active.streaming[index]
        self._saved(ordinal, item)
        return item

    # Tools

    async def _run_tool(self, active: ActiveTurn, call: ToolCall, tools: dict[str, Tool]) -> bool:
        """Runs one tool call between its preToolUse and postToolUse hooks; True if a hook stops the turn."""
        index = self._start_item(
            active,
            ItemType.TOOL_RESULT,
            tool_result=ToolResult(call_id=call.call_id, name=call.name),
            content=[Content(type="text", text="")],
        )
        item = active.streaming[index]
        assert item.tool_result is not None
        tool_input = _json_object(call.arguments)
        after = HookOutcome()
        try:
            before = await self._hook("preToolUse", {"tool_name": call.name, "tool_input": tool_input}, call.name)
            if before.blocked:
                output = ToolOutput(text=f"blocked by a hook: {before.reason}", is_error=True)
            else:
                if before.updated_input is not None:
                    call = attrs.evolve(call, arguments=json.dumps(before.updated_input))
                output = await self._tool_output(call, tools)
                after = await self._hook(
                    "postToolUse",
                    {"tool_name": call.name, "tool_input": tool_input, "tool_response": output.text},
                    call.name,
                )
                feedback = [after.reason] if after.blocked and after.reason else []
                if feedback or after.additional_context:
                    text = "\n\n".join([output.text, *feedback, *after.additional_context])
                    output = ToolOutput(text=text, is_error=output.is_error)
        except asyncio.CancelledError:
            item.content = [Content(type="text", text=INTERRUPTED_TOOL_TEXT)]
            item.tool_result.is_error = True
            raise
        item.content = [Content(type="text", text=output.text)]
        item.tool_result.is_error = output.is_error
        await self._complete_item(active, index, ItemStatus.COMPLETED)
        return before.stop or after.stop

    async def _tool_output(self, call: ToolCall, tools: dict[str, Tool]) -> ToolOutput:
        tool = tools.get(call.name)
        if tool is None:
            return ToolOutput(text=f"unknown tool: {call.name}; available: {', '.join(sorted(tools))}", is_error=True)
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as exc:
            return ToolOutput(text=f"the arguments are not valid JSON ({exc}): {call.arguments[:200]}", is_error=True)
        if not isinstance(arguments, dict):
            return ToolOutput(text="the arguments must be a JSON object", is_error=True)
        try:
            return await tool.run(arguments, self.conversation.tool_context())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("tool %s crashed", call.name)
            return ToolOutput(text=f"the tool failed: {type(exc).__name__}: {exc}", is_error=True)

    # Hooks

    async def _hook(self, event: str, payload: dict[str, Any], match: str | None = None) -> HookOutcome:
        """Runs the hooks of `event` (the same way in every session); their failures are reported
        to subscribers as `error` events and never fail the turn."""
        if self.active is not None:
            runner = self.active.hooks
        else:
            runner = self.conversation.runtime.source.hooks(self.conversation.definitions())
        if not runner.matching(event, match):
            return HookOutcome()
        payload = {"session_id": self.session.id, "conversation_id": self.session.conversation_id, **payload}
        outcome = await runner.run(
            event,
            payload,
            match=match,
            cwd=self.conversation.directory(),
            environment=self.conversation.environment,
        )
        for message in [*outcome.errors, *outcome.system_messages]:
            self.publish(events.ErrorEvent(error=ErrorInfo(kind=HOOK_FAILED, message=message)))
        return outcome

    async def _hook_message(self, active: ActiveTurn, text: str) -> None:
        item = Item(
            id=new_id("item"),
            conversation_id=self.session.conversation_id,
            session_id=self.session.id,
            turn_id=active.turn.id,
            type=ItemType.USER_MESSAGE,
            created_at=utcnow(),
            content=[Content(type="text", text=text)],
            from_=Address(kind=AddressKind.HOOK, name="stop"),
        )
        self._saved(await self.conversation.storage.append_item(item, durable=True), item)

    def instructions(self, definitions: Definitions) -> str:
        """The agent's instructions (or the default ones) and the list of its skills."""
        agent = next((a for a in definitions.agents if a.name == self.session.agent_name), None)
        base = agent.instructions if agent is not None and agent.instructions else None
        base = base or DEFAULT_INSTRUCTIONS.format(directory=self.conversation.directory())
        listed = skills_prompt(agent_skills(definitions, agent))
        return f"{base}\n\n{listed}" if listed else base

    async def stop(self) -> None:
        """Runtime shutdown: the running turn ends interrupted and is saved."""
        if self.active is not None and self.active.task is not None:
            self.active.interrupting = True
            self.active.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.active.task


def _text(item: Item | None) -> str:
    return context.item_text(item) if item is not None else ""


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _empty_text() -> Content:
    return Content(type="text", text="")
