"""Subscribing to a conversation, a session or the set of running conversations (see `live.py` for
how subscriptions are kept and fed)."""

from __future__ import annotations

from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import SessionNotFound
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.state import RuntimeState
from openvaala_lsp.storage.interfaces import all_sessions


class Subscribing:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state

    async def conversation(
        self, client: Client, params: api.SubscribeConversationParams
    ) -> api.SubscribeConversationResult:
        state = self.state
        conversation = await state.conversation(params.conversation_id)
        sessions = await all_sessions(state.storage, conversation.id)
        infos = [state.runtime_info(session) for session in sessions]
        return state.live.subscribe_conversation(client, conversation.id, conversation.title, infos)

    async def session(self, client: Client, params: api.SubscribeSessionParams) -> api.SubscribeSessionResult:
        opened = await self.state.opened(params.conversation_id)
        runner = opened.runner(params.session_id)
        if runner is None:
            await self.state.session(params.conversation_id, params.session_id)  # the right error kind
            raise SessionNotFound(f"session not found: {params.session_id}")
        return self.state.live.subscribe_session(client, opened, runner, self.state.answer_bytes())

    async def snapshot_page(self, client: Client, params: api.GetSessionSnapshotParams) -> api.GetSessionSnapshotResult:
        return self.state.live.snapshot_page(client, params.subscription_id, params.cursor)

    async def running(
        self, client: Client, params: api.SubscribeRunningConversationsParams
    ) -> api.SubscribeRunningConversationsResult:
        return self.state.live.subscribe_running(client)

    async def unsubscribe(self, client: Client, params: api.UnsubscribeParams) -> api.EmptyResult:
        self.state.live.unsubscribe(client, params.subscription_id)
        return api.EmptyResult()
