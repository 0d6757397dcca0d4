"""`SplitStorage`: the runtime's one storage, sending each ephemeral conversation to memory and every
other to the database. A conversation is ephemeral from its creation (`Conversation.ephemeral`), so
nothing of it ever reaches a table; lists merge both, in the database's order and cursor format."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Iterable
from typing import Any

from openvaala_lsp.model import (
    Conversation,
    ConversationId,
    ConversationListEntry,
    Item,
    ItemId,
    LoggedItem,
    ModelCall,
    Order,
    Ordinal,
    Page,
    PendingInput,
    Session,
    SessionId,
    Turn,
    TurnId,
)
from openvaala_lsp.storage import cursors
from openvaala_lsp.storage.interfaces import MAX_RESULT_BYTES, ExportOutcome, ExportRequest, SqlResult, Storage
from openvaala_lsp.storage.memory import MemoryStorage, conversation_sort_key


class SplitStorage:
    def __init__(self, durable: Storage, memory: MemoryStorage | None = None) -> None:
        self.durable = durable
        self.memory = memory or MemoryStorage()

    def _for(self, conversation_id: ConversationId) -> Any:
        return self.memory if self.memory.holds(conversation_id) else self.durable

    # Records

    async def create_conversation(self, conversation: Conversation, session: Session) -> None:
        store = self.memory if conversation.ephemeral else self.durable
        await store.create_conversation(conversation, session)

    async def get_conversation(self, conversation_id: ConversationId) -> Conversation | None:
        conversation: Conversation | None = await self._for(conversation_id).get_conversation(conversation_id)
        return conversation

    async def update_conversation(self, conversation: Conversation) -> None:
        await self._for(conversation.id).update_conversation(conversation)

    async def touch_conversation(self, conversation_id: ConversationId, at: dt.datetime) -> None:
        await self._for(conversation_id).touch_conversation(conversation_id, at)

    async def delete_conversation(self, conversation_id: ConversationId) -> bool:
        deleted: bool = await self._for(conversation_id).delete_conversation(conversation_id)
        return deleted

    async def list_conversations(
        self, *, cursor: str | None, limit: int, order: Order, archived: bool | None, query: str | None
    ) -> Page[ConversationListEntry, str]:
        filters: dict[str, Any] = {
            "cursor": cursor,
            "limit": limit,
            "order": order,
            "archived": archived,
            "query": query,
        }
        stored = await self.durable.list_conversations(**filters)
        held = await self.memory.list_conversations(**filters)
        if not held.items:
            return stored
        merged = sorted([*stored.items, *held.items], key=conversation_sort_key, reverse=order is Order.DESC)
        more = stored.next_cursor is not None or held.next_cursor is not None or len(merged) > limit
        page = merged[:limit]
        next_cursor = cursors.encode(cursors.CONVERSATIONS, *conversation_sort_key(page[-1])) if more else None
        return Page(items=page, next_cursor=next_cursor)

    async def create_session(self, session: Session) -> None:
        await self._for(session.conversation_id).create_session(session)

    async def update_session(self, session: Session) -> None:
        await self._for(session.conversation_id).update_session(session)

    async def get_session(self, session_id: SessionId) -> Session | None:
        store = self.memory if self.memory.holds_session(session_id) else self.durable
        session: Session | None = await store.get_session(session_id)
        return session

    async def list_sessions(
        self, conversation_id: ConversationId, *, cursor: str | None, limit: int, order: Order
    ) -> Page[Session, str]:
        page: Page[Session, str] = await self._for(conversation_id).list_sessions(
            conversation_id, cursor=cursor, limit=limit, order=order
        )
        return page

    async def save_turn(self, turn: Turn, *, durable: bool = False, new: bool = False, saved: bool = False) -> None:
        await self._for(turn.conversation_id).save_turn(turn, durable=durable, new=new, saved=saved)

    async def mark_reverted(
        self, conversation_id: ConversationId, turn_ids: list[TurnId], reverted_by: TurnId | None
    ) -> None:
        await self._for(conversation_id).mark_reverted(conversation_id, turn_ids, reverted_by)

    async def get_turns(self, conversation_id: ConversationId, turn_ids: list[TurnId]) -> list[Turn]:
        turns: list[Turn] = await self._for(conversation_id).get_turns(conversation_id, turn_ids)
        return turns

    async def list_turns(
        self,
        conversation_id: ConversationId,
        *,
        session_id: SessionId | None,
        cursor: str | None,
        limit: int,
        order: Order,
    ) -> Page[Turn, str]:
        page: Page[Turn, str] = await self._for(conversation_id).list_turns(
            conversation_id, session_id=session_id, cursor=cursor, limit=limit, order=order
        )
        return page

    async def count_turns(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        count: int = await self._for(conversation_id).count_turns(conversation_id, session_id)
        return count

    async def interrupt_running_turns(self, ended_at: dt.datetime) -> list[Turn]:
        return await self.durable.interrupt_running_turns(ended_at)  # memory starts empty with the process

    async def save_pending_input(self, pending: PendingInput, *, new: bool = False, durable: bool = True) -> None:
        await self._for(pending.item.conversation_id).save_pending_input(pending, new=new, durable=durable)

    async def remove_pending_input(
        self, conversation_id: ConversationId, item_id: ItemId, *, durable: bool = True
    ) -> None:
        await self._for(conversation_id).remove_pending_input(conversation_id, item_id, durable=durable)

    async def list_pending_inputs(self, conversation_id: ConversationId) -> list[PendingInput]:
        pending: list[PendingInput] = await self._for(conversation_id).list_pending_inputs(conversation_id)
        return pending

    async def find_input(self, conversation_id: ConversationId, input_id: str) -> ItemId | None:
        found: ItemId | None = await self._for(conversation_id).find_input(conversation_id, input_id)
        return found

    # Logs

    async def append_item(self, item: Item, *, input_id: str | None = None, durable: bool = False) -> Ordinal:
        ordinal: Ordinal = await self._for(item.conversation_id).append_item(item, input_id=input_id, durable=durable)
        return ordinal

    def save_streaming(self, item: Item) -> None:
        self._for(item.conversation_id).save_streaming(item)

    async def list_items(
        self,
        conversation_id: ConversationId,
        *,
        session_id: SessionId | None,
        cursor: Ordinal | None,
        limit: int,
        order: Order,
        max_bytes: int | None = None,
    ) -> Page[LoggedItem, int]:
        page: Page[LoggedItem, int] = await self._for(conversation_id).list_items(
            conversation_id, session_id=session_id, cursor=cursor, limit=limit, order=order, max_bytes=max_bytes
        )
        return page

    async def get_items(self, conversation_id: ConversationId, item_ids: list[ItemId]) -> list[LoggedItem]:
        items: list[LoggedItem] = await self._for(conversation_id).get_items(conversation_id, item_ids)
        return items

    async def last_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        ordinal: Ordinal = await self._for(conversation_id).last_ordinal(conversation_id)
        return ordinal

    async def count_items(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        count: int = await self._for(conversation_id).count_items(conversation_id, session_id)
        return count

    async def append_model_call(self, call: ModelCall) -> None:
        await self._for(call.conversation_id).append_model_call(call)

    async def list_model_calls(
        self, conversation_id: ConversationId, session_id: SessionId | None = None
    ) -> list[ModelCall]:
        calls: list[ModelCall] = await self._for(conversation_id).list_model_calls(conversation_id, session_id)
        return calls

    async def import_conversation(
        self, conversation: Conversation, sessions: Iterable[Session], turns: Iterable[Turn], items: Iterable[Item]
    ) -> list[Ordinal]:
        store = self.memory if conversation.ephemeral else self.durable
        ordinals: list[Ordinal] = await store.import_conversation(conversation, sessions, turns, items)
        return ordinals

    # SQL and the database's life: the database only (ephemeral conversations are in no table)

    async def query(
        self, sql: str, parameters: list[Any], limit: int, *, max_bytes: int = MAX_RESULT_BYTES
    ) -> SqlResult:
        return await self.durable.query(sql, parameters, limit, max_bytes=max_bytes)

    async def export_usage(self, request: ExportRequest) -> ExportOutcome:
        return await self.durable.export_usage(request)  # ephemeral conversations are never exported

    def flush(self) -> Awaitable[None]:
        return self.durable.flush()

    async def close(self) -> None:
        await self.durable.close()
