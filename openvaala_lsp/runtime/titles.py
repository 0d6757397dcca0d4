"""Titles: after a conversation's first exchange, a short title from one cheap call, off the turn's
critical path (the turn has ended when it starts). The agent's `titleModel` writes it, else the
session's model; `titles = false` on the agent turns it off. A title the user set is never
overwritten: the title is written only while the conversation still has none."""

from __future__ import annotations

import asyncio
import logging
import re

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import (
    Content,
    ConversationId,
    ModelCallPurpose,
    TokenUsage,
    Turn,
    TurnStatus,
    utcnow,
)
from openvaala_lsp.protocol import events
from openvaala_lsp.providers.base import Message, ModelRequest
from openvaala_lsp.runtime import catalog, context, model_calls
from openvaala_lsp.runtime.conversation import OpenConversation
from openvaala_lsp.runtime.model_clients import resolve_model
from openvaala_lsp.runtime.session import SessionRunner
from openvaala_lsp.runtime.state import RuntimeState

logger = logging.getLogger(__name__)

TITLE_INSTRUCTIONS = (
    "Write a title for the conversation below: at most six words, in its language, naming its subject. "
    "Reply with the title only: no quotes, no markdown, no full stop."
)
MAX_EXCERPT = 2000  # characters of the question and of the answer shown to the title model
MAX_TITLE = 80
TITLE_TOKENS = 32


class Titles:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state
        self._asked: set[ConversationId] = set()  # one attempt per conversation and runtime
        state.turn_listeners.append(self._turn_ended)

    def _turn_ended(self, conversation_id: ConversationId) -> None:
        opened = self.state.open.get(conversation_id)
        if opened is None or opened.record.title or conversation_id in self._asked:
            return
        runner = opened.main_runner()
        turn = runner.last_turn
        if turn is None or turn.status is not TurnStatus.COMPLETED or turn.session_id != runner.session.id:
            return  # a title waits for a first exchange that worked
        agent = catalog.configured_agent(opened.definitions(), runner.session.agent_name)
        if agent is not None and not agent.titles:
            return
        self._asked.add(conversation_id)
        self.state.spawn(self._title(opened, runner, turn), name=f"title {conversation_id}")

    async def _title(self, opened: OpenConversation, runner: SessionRunner, turn: Turn) -> None:
        try:
            title = await self._ask(opened, runner, turn)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a title is a nicety: its failure is logged, never shown as an error
            logger.info("no title for %s: %s", opened.id, exc)
            return
        if not title:
            return
        state = self.state
        async with state.record_locks[opened.id]:
            conversation = await state.storage.get_conversation(opened.id)
            if conversation is None or conversation.title:
                return  # deleted meanwhile, or titled by the user: theirs stays
            conversation.title = title
            conversation.updated_at = utcnow()
            await state.storage.update_conversation(conversation)
            if (current := state.open.get(opened.id)) is not None:
                current.record = conversation
        state.live.publish_conversation(opened.id, events.TitleChanged(title=title))

    async def _ask(self, opened: OpenConversation, runner: SessionRunner, turn: Turn) -> str:
        # loaded with the first turn, not with the runtime (see Conversations.create)

        definitions = opened.definitions()
        agent = catalog.configured_agent(definitions, runner.session.agent_name)
        model: ModelDefinition | None = None
        if agent is not None and agent.title_model is not None:
            model = next((m for m in definitions.models if m.ref == agent.title_model), None)
        model = model or resolve_model(definitions, runner.session.model, runner.session.agent_name)
        history = await runner.history()
        question = next((context.item_text(i) for i in history if i.turn_id == turn.id and i.type == "userMessage"), "")
        answer = next((context.item_text(i) for i in reversed(history) if i.type == "assistantMessage"), "")
        excerpt = f"User: {question[:MAX_EXCERPT]}\n\nAssistant: {answer[:MAX_EXCERPT]}"
        request = ModelRequest(
            model=model.ref.name,
            instructions=TITLE_INSTRUCTIONS,
            messages=[Message(role="user", content=[Content(type="text", text=excerpt)])],
            tools=[],
            max_output_tokens=TITLE_TOKENS,
            reasoning_effort=None,
        )
        record = model_calls.new_record(turn, model, opened.workspace_root(), ModelCallPurpose.TITLE)
        provider = await opened.provider(model)
        call = model_calls.TextCall(record)
        try:
            await call.run(provider, request)
        finally:
            reported = call.usage
            if reported is None:  # what was sent and what came back, estimated
                sent = context.estimate_text(TITLE_INSTRUCTIONS + excerpt)
                got = context.estimate_text(call.text)
                reported = TokenUsage(input_tokens=sent, output_tokens=got, total_tokens=sent + got)
                record.usage_estimated = True
            runner.usage.record(record, reported, [], [], 0, in_context=False)
            await opened.storage.append_model_call(record)
            runner.publish(events.UsageUpdated(usage=runner.usage.usage))
        return clean(call.text)


def clean(text: str) -> str:
    """The title in a model's reply: its first line, without quotes, markdown or a full stop."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = re.sub(r"^(title:\s*)", "", line, flags=re.IGNORECASE).replace("**", "").replace("`", "")
    line = line.strip("#*_`\"' \u2018\u2019\u201c\u201d").rstrip(".\u3002!")
    return line[:MAX_TITLE].strip()
