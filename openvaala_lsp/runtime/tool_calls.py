"""Running one tool call of the model between its preToolUse and postToolUse hooks. Whatever goes
wrong (an unknown tool, bad arguments, a crash, a blocking hook) becomes the call's result, which
the model reads and can act on; only an interrupt ends the turn."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import attrs

from openvaala_lsp.hooks import HookOutcome
from openvaala_lsp.model import Content, ItemStatus, ItemType, ToolCall, ToolResult
from openvaala_lsp.runtime.session_hooks import SessionHooks
from openvaala_lsp.runtime.streaming import TurnItems
from openvaala_lsp.tools.base import Tool, ToolContext, ToolOutput

logger = logging.getLogger(__name__)

INTERRUPTED_TOOL_TEXT = "[interrupted: the tool was stopped]"


async def run_tool_call(
    call: ToolCall, tools: dict[str, Tool], items: TurnItems, hooks: SessionHooks, context: ToolContext
) -> bool:
    """Runs the call and saves its result item; True if a hook says the turn must stop."""
    index = items.start(
        ItemType.TOOL_RESULT,
        tool_result=ToolResult(call_id=call.call_id, name=call.name),
        content=[Content(type="text", text="")],
    )
    item = items.streaming[index]
    assert item.tool_result is not None
    tool_input = json_object(call.arguments)
    after = HookOutcome()
    try:
        before = await hooks.fire("preToolUse", {"tool_name": call.name, "tool_input": tool_input}, call.name)
        if before.blocked:
            output = ToolOutput(text=f"blocked by a hook: {before.reason}", is_error=True)
        else:
            if before.updated_input is not None:
                call = attrs.evolve(call, arguments=json.dumps(before.updated_input))
            output = await tool_output(call, tools, context)
            after = await hooks.fire(
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
    await items.complete(index, ItemStatus.COMPLETED)
    return before.stop or after.stop


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
    try:
        return await tool.run(arguments, context)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        logger.exception("tool %s crashed", call.name)
        return ToolOutput(text=f"the tool failed: {type(exc).__name__}: {exc}", is_error=True)


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
