"""Running the tool calls of one model response. Each call first passes its preToolUse hooks and the
permissions (`permissions.py`), waiting for the user's approval where they ask; then the calls are
saved together (they are one assistant message to the model) and run in order, each followed by its
postToolUse hooks. Whatever goes wrong (an unknown tool, bad arguments, a crash, a refusal, a call
past its deadline) becomes the call's result, which the model reads and can act on; only an
interrupt ends the turn, and it never waits long on a tool (`STOP_SECONDS`)."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import attrs

from openvaala_lsp.definitions import AgentDefinition, PermissionDecision
from openvaala_lsp.hooks.outcome import HookOutcome
from openvaala_lsp.model import AddressKind, Content, Item, ItemStatus, ItemType, ToolCall, ToolResult
from openvaala_lsp.protocol.api import ApprovalDecision
from openvaala_lsp.runtime import permissions
from openvaala_lsp.runtime.approvals import Answer, Approvals
from openvaala_lsp.runtime.hosts import SessionHost
from openvaala_lsp.runtime.session_hooks import SessionHooks
from openvaala_lsp.runtime.streaming import TurnItems
from openvaala_lsp.telemetry.base import CALLING, NOTHING, Parent, ToolCallSpan
from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import Tool, ToolContext, ToolOutput
from openvaala_lsp.tools.truncate import truncate_text

logger = logging.getLogger(__name__)

INTERRUPTED_TOOL_TEXT = "[interrupted: the tool was stopped]"
QUICK_TOOL_SECONDS = 0.05  # a tool that ends within this shows its call saved with its result
# the longest an interrupted turn waits for its tool to end: one still ending after that (a process
# slow to die) goes on ending as a runtime task, which `Runtime.stop` waits for
STOP_SECONDS = 1.0
# a remote executor's sandbox is the host's, not this machine's: whether it starts is said in the result
REMOTE_SANDBOX = sandbox.SandboxState(usable=True, binary=None, reason="the host's bwrap, when it starts there")

Spawn = Callable[[Coroutine[Any, Any, ToolOutput]], "asyncio.Task[ToolOutput]"]


@attrs.define(eq=False)
class CallGate:
    """What decides whether a turn's calls run: the agent's permissions and sandbox, what the user
    allowed for the conversation, and the user, asked through the session's approvals."""

    agent: AgentDefinition | None
    host: SessionHost
    approvals: Approvals


@attrs.define(eq=False)
class PlannedCall:
    index: int  # the call's itemIndex while it streams
    call: ToolCall  # with the arguments a hook put in its place
    context: ToolContext  # where it runs, in which sandbox
    refusal: str | None = None  # why it does not run, for the model
    said: list[str] = attrs.Factory(list)  # notes for the model with the result


async def run_tool_calls(
    indexes: list[int],
    tools: dict[str, Tool],
    items: TurnItems,
    hooks: SessionHooks,
    gate: CallGate,
    context: ToolContext,
    *,
    trace: Parent = NOTHING,
) -> bool:
    """Decides, saves and runs the calls still streaming at `indexes`; True if a hook says the turn
    must stop (the calls after the one it stopped at are not made). Each run is a span in `trace`."""
    planned: list[PlannedCall] = []
    stop = False
    for index in indexes:
        plan, stop = await _plan(index, tools, items, hooks, gate, context)
        planned.append(plan)
        if stop:
            break
    # each call runs while they commit, asked for once the first call's tool has started (see _run)
    await items.complete_many(indexes, ItemStatus.COMPLETED, later=True, now=False)
    for plan in planned:
        if await _run(plan, tools, items, hooks, gate.host.spawn, trace.tool_call(plan.call)):
            return True
    return stop


async def _plan(
    index: int, tools: dict[str, Tool], items: TurnItems, hooks: SessionHooks, gate: CallGate, context: ToolContext
) -> tuple[PlannedCall, bool]:
    item = items.streaming[index]
    assert item.tool_call is not None
    call = item.tool_call
    before = await hooks.fire(
        "preToolUse", {"tool_name": call.name, "tool_input": _arguments(call.arguments) or {}}, call.name
    )
    plan = PlannedCall(index=index, call=call, context=context)
    if before.blocked:
        plan.refusal = f"blocked by a hook: {before.reason}"
        return plan, before.stop
    if before.updated_input is not None:
        plan.call = attrs.evolve(call, arguments=json.dumps(before.updated_input))
    arguments = _arguments(plan.call.arguments)
    if plan.call.name not in tools or arguments is None:
        return plan, before.stop  # it cannot run: running it says why
    await _permit(plan, item, items, arguments, gate, before)
    return plan, before.stop


async def _permit(
    plan: PlannedCall, item: Item, items: TurnItems, arguments: dict[str, Any], gate: CallGate, before: HookOutcome
) -> None:
    hook = permissions.HookPermission(before.permission, before.ask_reason) if before.permission else None
    state = REMOTE_SANDBOX if plan.context.remote else sandbox.known()
    if state is None:
        state = await asyncio.to_thread(sandbox.state)  # probed once per process, off the event loop
    remembered = gate.host.always_allowed()
    verdict = permissions.decide(plan.call.name, arguments, gate.agent, remembered, plan.context, state, hook)
    plan.context = attrs.evolve(plan.context, sandbox=verdict.sandbox, guard_git=verdict.remembered)
    if verdict.note:
        plan.said.append(verdict.note)
    if verdict.decision is PermissionDecision.DENY:
        plan.refusal = f"not allowed ({verdict.reason}); do not retry it as it is: find another way, or ask the user"
        return
    if verdict.decision is PermissionDecision.ALLOW:
        return
    assert verdict.request is not None
    await items.settle()  # what the answer said before the call is reported saved before anyone is asked
    item.status = ItemStatus.AWAITING_APPROVAL  # in snapshots until answered; the events say so
    try:
        answer = await gate.approvals.ask(item.id, verdict.request)
    finally:
        item.status = ItemStatus.STREAMING
    # a write to what governs the agent is allowed for itself only, however the user answered
    if answer.decision is ApprovalDecision.ALLOW_ALWAYS and verdict.governing is None:
        await gate.host.remember_allowed(permissions.always_allowed(plan.call.name, arguments))
    if not answer.allowed:
        plan.refusal = _denial(verdict.reason, answer)
        return
    plan.context = attrs.evolve(plan.context, approved_write=verdict.governing)
    if answer.message:
        plan.said.append(f"[the user allowed it and said: {truncate_text(answer.message)}]")


def _denial(reason: str, answer: Answer) -> str:
    """What the model reads of a refusal; the user's words cut like a tool's output."""
    if answer.by.kind is AddressKind.SESSION:  # nobody could answer
        return f"not run: it needs the user's approval ({reason}), but {answer.message}"
    said = f": {answer.message}" if answer.message else ""
    return truncate_text(f"the user denied this call ({reason}){said}")


async def _run(
    plan: PlannedCall, tools: dict[str, Tool], items: TurnItems, hooks: SessionHooks, spawn: Spawn, span: ToolCallSpan
) -> bool:
    """Runs one decided call and saves its result item; True if a postToolUse hook stops the turn.
    The call is reported saved before its result item starts. A tool that ends within
    `QUICK_TOOL_SECONDS` (with no postToolUse hook to run) has its call and result committed together
    while the turn goes on, and reported in that order once they are; a slower one has its call
    committed meanwhile (the tool goes on) and its result item started (shown running) once the
    call is reported."""
    call = plan.call
    calling = CALLING.set(span)  # the tool's task runs within its span (a sub-agent's turn nests there)
    try:
        running = None if plan.refusal is not None else spawn(tool_output(call, tools, plan.context))
    finally:
        CALLING.reset(calling)
    try:
        if running is not None:
            # the tool's first step (a command's start) runs before any commit is asked for: beside
            # a commit, a process spawn took ~6 ms instead of ~0.3 (traced)
            await asyncio.sleep(0)
            if not hooks.runner.matching("postToolUse", call.name):
                await _first_of(running, items)
        if running is None or running.done():
            result = items.new(ItemType.TOOL_RESULT, tool_result=ToolResult(call_id=call.call_id, name=call.name))
            result.content = [Content(type="text", text="")]
            started = copy.deepcopy(result)
            refused = ToolOutput(text=plan.refusal or "", is_error=True)
            output = refused if running is None else running.result()
            _fill(result, plan, output)
            span.finish(output.text, is_error=output.is_error)
            await items.add_later(result, started)
            return False
        await items.settle()
    except BaseException:
        span.finish(INTERRUPTED_TOOL_TEXT, is_error=True)
        await _stop(running)
        raise
    index = items.start(
        ItemType.TOOL_RESULT,
        tool_result=ToolResult(call_id=call.call_id, name=call.name),
        content=[Content(type="text", text="")],
    )
    item = items.streaming[index]
    try:
        output = await running
        tool_input = _arguments(call.arguments) or {}
        payload = {"tool_name": call.name, "tool_input": tool_input, "tool_response": output.text}
        after = await hooks.fire("postToolUse", payload, call.name)
        feedback = [after.reason] if after.blocked and after.reason else []
        text = "\n\n".join([output.text, *feedback, *after.additional_context])
        output = attrs.evolve(output, text=text)
    except asyncio.CancelledError:
        span.finish(INTERRUPTED_TOOL_TEXT, is_error=True)
        await _stop(running)
        _fill(item, plan, ToolOutput(text=INTERRUPTED_TOOL_TEXT, is_error=True), notes=False)
        raise
    span.finish(output.text, is_error=output.is_error)
    _fill(item, plan, output)
    # the next model request goes out while the result commits; its answer waits for the commit
    await items.complete_many([index], ItemStatus.COMPLETED, later=True)
    return after.stop


async def _first_of(running: asyncio.Future[ToolOutput], items: TurnItems) -> None:
    """Until the tool ends or what the turn committed before it is reported, whichever comes first.
    The commit is asked for only if the tool is still running after `QUICK_TOOL_SECONDS`: a quick
    tool runs with no commit beside it (a command beside one took 6.5 ms instead of 3, traced), and
    its call goes in one commit with its result, asked for once the next request is on its way."""
    await asyncio.wait([running], timeout=QUICK_TOOL_SECONDS)
    if running.done():
        return
    settling = asyncio.ensure_future(items.settle())
    either: list[asyncio.Future[Any]] = [running, settling]
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not settling.done():
            settling.cancel()  # its commits go on, reported as they land
            await asyncio.gather(settling, return_exceptions=True)
    if settling.done() and not settling.cancelled():
        settling.result()  # a commit that failed fails the turn, as `settle` would have


def _fill(item: Item, plan: PlannedCall, output: ToolOutput, *, notes: bool = True) -> None:
    """A result item's text: the output, after the notes for the model (`plan.said`); and what the
    call changed on disk."""
    assert item.tool_result is not None
    said = plan.said if notes else []
    item.content = [Content(type="text", text="\n\n".join([*said, output.text]))]
    item.tool_result.is_error = output.is_error
    item.tool_result.file_changes = output.file_changes  # for people and editors: not in the model's text


async def _stop(running: asyncio.Future[ToolOutput] | None) -> None:
    """Stops a tool that is still running and waits for it to end (its process killed), up to
    `STOP_SECONDS`."""
    if running is not None and not running.done():
        running.cancel()
        await asyncio.wait([running], timeout=STOP_SECONDS)


async def tool_output(call: ToolCall, tools: dict[str, Tool], context: ToolContext) -> ToolOutput:
    tool = tools.get(call.name)
    if tool is None:
        return ToolOutput(text=f"unknown tool: {call.name}; available: {', '.join(sorted(tools))}", is_error=True)
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as exc:
        return ToolOutput(text=f"the arguments are not valid JSON ({exc}): {call.arguments[:200]}", is_error=True)
    if not isinstance(arguments, dict):
        return ToolOutput(text="the arguments must be a JSON object", is_error=True)
    limit = tool.time_limit(arguments)
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await tool.run(arguments, context)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if deadline.expired():
            text = f"[the tool did not end within {limit:g} s and was stopped, with whatever it started]"
            return ToolOutput(text=text, is_error=True)
        logger.exception("tool %s crashed", call.name)
        return ToolOutput(text=f"the tool failed: {type(exc).__name__}: {exc}", is_error=True)


def _arguments(text: str) -> dict[str, Any] | None:
    """A call's arguments, if they are the JSON object a tool takes (hooks see {} otherwise)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
