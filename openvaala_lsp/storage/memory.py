"""`MemoryStorage`: the storage interfaces held in this process only, for ephemeral conversations
(nothing of them may reach the database). It keeps the contract of `interfaces.py` — ordinals, keyset
cursors in the same format, read-your-writes — and hands out copies, as a database would, so no
caller shares a mutable object with the store."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Iterable
from typing import TypeVar

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
    TurnReason,
    TurnStatus,
    encoded_size,
)
from openvaala_lsp.storage import cursors

T = TypeVar("T")


class _Log:
    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.last_activity: dt.datetime | None = None
        self.sessions: dict[SessionId, Session] = {}
        self.turns: dict[TurnId, Turn] = {}
        self.items: list[LoggedItem] = []
        self.input_ids: dict[str, ItemId] = {}
        self.pending: dict[ItemId, PendingInput] = {}  # insertion order is submission order
        self.model_calls: list[ModelCall] = []


class MemoryStorage:
    def __init__(self) -> None:
        self._logs: dict[ConversationId, _Log] = {}
        self._session_owner: dict[SessionId, ConversationId] = {}

    def holds(self, conversation_id: ConversationId) -> bool:
        return conversation_id in self._logs

    def holds_session(self, session_id: SessionId) -> bool:
        return session_id in self._session_owner

    def _log(self, conversation_id: ConversationId) -> _Log | None:
        return self._logs.get(conversation_id)

    # Records

    async def create_conversation(self, conversation: Conversation, session: Session) -> None:
        self._logs[conversation.id] = _Log(copy.deepcopy(conversation))
        await self.create_session(session)

    async def get_conversation(self, conversation_id: ConversationId) -> Conversation | None:
        log = self._log(conversation_id)
        return copy.deepcopy(log.conversation) if log else None

    async def update_conversation(self, conversation: Conversation) -> None:
        if (log := self._log(conversation.id)) is not None:
            log.conversation = copy.deepcopy(conversation)

    async def touch_conversation(self, conversation_id: ConversationId, at: dt.datetime) -> None:
        if (log := self._log(conversation_id)) is not None:
            log.last_activity = at

    async def delete_conversation(self, conversation_id: ConversationId) -> bool:
        log = self._logs.pop(conversation_id, None)
        if log is None:
            return False
        for session_id in log.sessions:
            self._session_owner.pop(session_id, None)
        return True

    async def list_conversations(
        self, *, cursor: str | None, limit: int, order: Order, archived: bool | None, query: str | None
    ) -> Page[ConversationListEntry, str]:
        entries = [
            ConversationListEntry(conversation=copy.deepcopy(log.conversation), last_activity_at=log.last_activity)
            for log in self._logs.values()
            if (archived is None or log.conversation.archived == archived)
            and (not query or query.lower() in log.conversation.title.lower())
        ]
        return keyset_page(entries, conversation_sort_key, cursors.CONVERSATIONS, cursor, limit, order)

    async def create_session(self, session: Session) -> None:
        log = self._logs[session.conversation_id]
        log.sessions[session.id] = copy.deepcopy(session)
        self._session_owner[session.id] = session.conversation_id

    async def update_session(self, session: Session) -> None:
        log = self._log(session.conversation_id)
        if log is not None and session.id in log.sessions:
            log.sessions[session.id] = copy.deepcopy(session)

    async def get_session(self, session_id: SessionId) -> Session | None:
        owner = self._session_owner.get(session_id)
        return copy.deepcopy(self._logs[owner].sessions[session_id]) if owner else None

    async def list_sessions(
        self, conversation_id: ConversationId, *, cursor: str | None, limit: int, order: Order
    ) -> Page[Session, str]:
        log = self._log(conversation_id)
        sessions = [copy.deepcopy(s) for s in log.sessions.values()] if log else []
        return keyset_page(sessions, lambda s: (s.created_at, s.id), cursors.SESSIONS, cursor, limit, order)

    async def save_turn(self, turn: Turn, *, durable: bool = False, new: bool = False, saved: bool = False) -> None:
        if (log := self._log(turn.conversation_id)) is not None:
            kept = log.turns.get(turn.id)
            log.turns[turn.id] = copy.deepcopy(turn)
            if kept is not None:  # set by a revert alone (`mark_reverted`), as in the database
                log.turns[turn.id].reverted_by = kept.reverted_by

    async def mark_reverted(
        self, conversation_id: ConversationId, turn_ids: list[TurnId], reverted_by: TurnId | None
    ) -> None:
        log = self._log(conversation_id)
        for tid in turn_ids:
            if log is not None and tid in log.turns:
                log.turns[tid].reverted_by = reverted_by

    async def get_turns(self, conversation_id: ConversationId, turn_ids: list[TurnId]) -> list[Turn]:
        log = self._log(conversation_id)
        return [copy.deepcopy(log.turns[t]) for t in turn_ids if log and t in log.turns]

    async def list_turns(
        self,
        conversation_id: ConversationId,
        *,
        session_id: SessionId | None,
        cursor: str | None,
        limit: int,
        order: Order,
    ) -> Page[Turn, str]:
        turns = [copy.deepcopy(t) for t in self._turns(conversation_id, session_id)]
        return keyset_page(turns, lambda t: (t.started_at, t.id), cursors.TURNS, cursor, limit, order)

    def _turns(self, conversation_id: ConversationId, session_id: SessionId | None) -> list[Turn]:
        log = self._log(conversation_id)
        return [t for t in log.turns.values() if session_id in (None, t.session_id)] if log else []

    async def count_turns(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        return len(self._turns(conversation_id, session_id))

    async def interrupt_running_turns(self, ended_at: dt.datetime) -> list[Turn]:
        interrupted = []
        for log in self._logs.values():
            for turn in log.turns.values():
                if turn.status is TurnStatus.RUNNING:
                    turn.status, turn.ended_at = TurnStatus.INTERRUPTED, ended_at
                    turn.reason = TurnReason.RUNTIME_STOPPED
                    interrupted.append(copy.deepcopy(turn))
        return interrupted

    async def save_pending_input(self, pending: PendingInput, *, new: bool = False, durable: bool = True) -> None:
        if (log := self._log(pending.item.conversation_id)) is not None:
            log.pending[pending.item.id] = copy.deepcopy(pending)
            if pending.input_id:
                log.input_ids[pending.input_id] = pending.item.id

    async def remove_pending_input(
        self, conversation_id: ConversationId, item_id: ItemId, *, durable: bool = True
    ) -> None:
        if (log := self._log(conversation_id)) is not None:
            log.pending.pop(item_id, None)

    async def list_pending_inputs(self, conversation_id: ConversationId) -> list[PendingInput]:
        log = self._log(conversation_id)
        return [copy.deepcopy(p) for p in log.pending.values()] if log else []

    async def find_input(self, conversation_id: ConversationId, input_id: str) -> ItemId | None:
        log = self._log(conversation_id)
        return log.input_ids.get(input_id) if log else None

    # Logs

    def save_streaming(self, item: Item) -> None:
        """Nothing to do: what memory holds goes with the process."""

    async def append_item(self, item: Item, *, input_id: str | None = None, durable: bool = False) -> Ordinal:
        log = self._logs[item.conversation_id]
        ordinal = len(log.items) + 1
        log.items.append(LoggedItem(ordinal=ordinal, item=copy.deepcopy(item)))
        if input_id:
            log.input_ids[input_id] = item.id
        return ordinal

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
        log = self._log(conversation_id)
        logged = [li for li in (log.items if log else []) if session_id in (None, li.item.session_id)]
        if order is Order.DESC:
            logged = [li for li in reversed(logged) if cursor is None or li.ordinal < cursor]
        else:
            logged = [li for li in logged if cursor is None or li.ordinal > cursor]
        more = len(logged) > limit
        page: list[LoggedItem] = []
        size = 0
        for li in logged[:limit]:
            size += encoded_size(li.item) if max_bytes is not None else 0
            if max_bytes is not None and size > max_bytes and page:
                more = True
                break
            page.append(copy.deepcopy(li))
        return Page(items=page, next_cursor=page[-1].ordinal if more else None)

    async def get_items(self, conversation_id: ConversationId, item_ids: list[ItemId]) -> list[LoggedItem]:
        log = self._log(conversation_id)
        by_id = {li.item.id: li for li in (log.items if log else [])}
        return [copy.deepcopy(by_id[i]) for i in item_ids if i in by_id]

    async def last_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        log = self._log(conversation_id)
        return len(log.items) if log else 0

    async def count_items(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        log = self._log(conversation_id)
        return sum(1 for li in (log.items if log else []) if session_id in (None, li.item.session_id))

    async def append_model_call(self, call: ModelCall) -> None:
        if (log := self._log(call.conversation_id)) is not None:
            log.model_calls.append(copy.deepcopy(call))

    async def list_model_calls(
        self, conversation_id: ConversationId, session_id: SessionId | None = None
    ) -> list[ModelCall]:
        log = self._log(conversation_id)
        calls = log.model_calls if log else []
        return [copy.deepcopy(c) for c in calls if session_id in (None, c.session_id)]

    async def import_conversation(
        self, conversation: Conversation, sessions: Iterable[Session], turns: Iterable[Turn], items: Iterable[Item]
    ) -> list[Ordinal]:
        log = _Log(copy.deepcopy(conversation))
        self._logs[conversation.id] = log
        for session in sessions:
            await self.create_session(session)
        for turn in turns:
            log.turns[turn.id] = copy.deepcopy(turn)
        return [await self.append_item(item) for item in items]


def conversation_sort_key(entry: ConversationListEntry) -> tuple[dt.datetime, str]:
    """What conversations are listed by: last activity, else creation, then id (as in queries.py)."""
    return (entry.last_activity_at or entry.conversation.created_at, entry.conversation.id)


def keyset_page(
    entries: list[T],
    key: Callable[[T], tuple[dt.datetime, str]],
    kind: str,
    cursor: str | None,
    limit: int,
    order: Order,
) -> Page[T, str]:
    """A page of `entries` ordered by `key`, after `cursor` (whose format the database uses too)."""
    desc = order is Order.DESC
    ordered = sorted(entries, key=key, reverse=desc)
    if cursor is not None:
        after = cursors.decode(kind, cursor)
        ordered = [e for e in ordered if (key(e) < after if desc else key(e) > after)]
    page = ordered[:limit]
    next_cursor = cursors.encode(kind, *key(page[-1])) if len(ordered) > limit else None
    return Page(items=page, next_cursor=next_cursor)
