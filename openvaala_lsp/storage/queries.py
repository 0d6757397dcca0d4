"""The SQL of the store, as plain functions of a cursor; they run on the reader or writer thread, never the loop.

Lists are keyset-paginated: one row more than the page is fetched so the last page has no cursor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, TypeVar

import duckdb

from openvaala_lsp.model import (
    Conversation,
    ConversationId,
    ConversationListEntry,
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
    encoded_size,
)
from openvaala_lsp.storage import cursors
from openvaala_lsp.storage.codec import (
    CONVERSATION_SELECT,
    ITEM_SELECT,
    MODEL_CALL_SELECT,
    PENDING_SELECT,
    SESSION_SELECT,
    TURN_SELECT,
    Loader,
    Row,
    conversation_entry_from_row,
    logged_item_from_row,
    model_call_from_row,
    pending_from_row,
    session_from_row,
    turn_from_row,
)

Cursor = duckdb.DuckDBPyConnection
T = TypeVar("T")

ACTIVITY = "coalesce(last_activity_at, created_at)"


def _first(cur: Cursor, sql: str, params: list[Any]) -> Row | None:
    """Fetches the whole result: a streaming result left unread keeps its transaction open, and an
    open reader transaction that predates a committed UPDATE makes CHECKPOINT fail."""
    rows = cur.execute(sql, params).fetchall()
    return rows[0] if rows else None


def _keyset_page(
    cur: Cursor,
    *,
    kind: str,
    select: str,
    table: str,
    sort: str,
    where: list[str],
    params: list[Any],
    cursor: str | None,
    limit: int,
    order: Order,
    convert: Callable[[Row], T],
) -> Page[T, str]:
    """Rows ordered by (`sort`, id); each row is selected as `select` plus the sort value last."""
    desc = order is Order.DESC
    if cursor is not None:
        after_at, after_id = cursors.decode(kind, cursor)
        where = [*where, f"({sort}, id) {'<' if desc else '>'} (?::TIMESTAMPTZ, ?)"]
        params = [*params, after_at, after_id]
    direction = "DESC" if desc else "ASC"
    sql = (
        f"SELECT {select}, {sort} FROM {table} WHERE {' AND '.join(where) or 'true'} "
        f"ORDER BY {sort} {direction}, id {direction} LIMIT ?"
    )
    rows = cur.execute(sql, [*params, limit + 1]).fetchall()
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = cursors.encode(kind, rows[-1][-1], rows[-1][0])
    return Page(items=[convert(row[:-1]) for row in rows], next_cursor=next_cursor)


# Conversations


def get_conversation(cur: Cursor, conversation_id: ConversationId) -> Conversation | None:
    row = _first(cur, f"SELECT {CONVERSATION_SELECT} FROM conversations WHERE id = ?", [conversation_id])
    return conversation_entry_from_row(row).conversation if row else None


def list_conversations(
    cur: Cursor, *, cursor: str | None, limit: int, order: Order, archived: bool | None, query: str | None
) -> Page[ConversationListEntry, str]:
    where: list[str] = []
    params: list[Any] = []
    if archived is not None:
        where.append("archived = ?")
        params.append(archived)
    if query:
        # contains() has no wildcards, so `%` and `_` in the query need no escaping
        where.append("contains(lower(title), lower(?))")
        params.append(query)
    return _keyset_page(
        cur,
        kind=cursors.CONVERSATIONS,
        select=CONVERSATION_SELECT,
        table="conversations",
        sort=ACTIVITY,
        where=where,
        params=params,
        cursor=cursor,
        limit=limit,
        order=order,
        convert=conversation_entry_from_row,
    )


# Sessions


def get_session(cur: Cursor, session_id: SessionId) -> Session | None:
    row = _first(cur, f"SELECT {SESSION_SELECT} FROM sessions WHERE id = ?", [session_id])
    return session_from_row(row) if row else None


def list_sessions(
    cur: Cursor, conversation_id: ConversationId, *, cursor: str | None, limit: int, order: Order
) -> Page[Session, str]:
    return _keyset_page(
        cur,
        kind=cursors.SESSIONS,
        select=SESSION_SELECT,
        table="sessions",
        sort="created_at",
        where=["conversation_id = ?"],
        params=[conversation_id],
        cursor=cursor,
        limit=limit,
        order=order,
        convert=session_from_row,
    )


# Turns


def get_turns(cur: Cursor, conversation_id: ConversationId, turn_ids: list[TurnId]) -> list[Turn]:
    if not turn_ids:
        return []
    rows = cur.execute(
        f"SELECT {TURN_SELECT} FROM turns WHERE conversation_id = ? AND list_contains(?::VARCHAR[], id)",
        [conversation_id, turn_ids],
    ).fetchall()
    found = {row[0]: row for row in rows}
    return [turn_from_row(found[tid]) for tid in turn_ids if tid in found]


def list_turns(
    cur: Cursor,
    conversation_id: ConversationId,
    *,
    session_id: SessionId | None,
    cursor: str | None,
    limit: int,
    order: Order,
) -> Page[Turn, str]:
    where = ["conversation_id = ?"]
    params: list[Any] = [conversation_id]
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    return _keyset_page(
        cur,
        kind=cursors.TURNS,
        select=TURN_SELECT,
        table="turns",
        sort="started_at",
        where=where,
        params=params,
        cursor=cursor,
        limit=limit,
        order=order,
        convert=turn_from_row,
    )


def interrupt_running_turns(cur: Cursor, ended_at: dt.datetime) -> list[Turn]:
    """A write: run by the writer inside its transaction. The items they were streaming are logged in
    the same transaction (`DuckDBStorage.interrupt_running_turns`): their rows go."""
    rows = cur.execute(
        "UPDATE turns SET status = 'interrupted', reason = 'runtimeStopped', ended_at = ?"
        f" WHERE status = 'running' RETURNING {TURN_SELECT}",
        [ended_at],
    ).fetchall()
    cur.execute("DELETE FROM streaming_items")
    return sorted((turn_from_row(row) for row in rows), key=lambda turn: (turn.started_at, turn.id))


def streaming_payloads(cur: Cursor) -> list[str]:
    """The items a stopped runtime left streaming, of conversations that still exist and not logged
    already (a save racing the item's logging must not log it twice), in the order they started (ids
    are time-ordered)."""
    rows = cur.execute(
        "SELECT s.payload FROM streaming_items s JOIN conversations c ON c.id = s.conversation_id"
        " WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.conversation_id = s.conversation_id"
        " AND i.item_id = s.item_id) ORDER BY s.item_id"
    ).fetchall()
    return [payload for (payload,) in rows]


# Pending inputs


def list_pending_inputs(cur: Cursor, conversation_id: ConversationId, load: Loader) -> list[PendingInput]:
    rows = cur.execute(
        f"SELECT {PENDING_SELECT} FROM pending_inputs WHERE conversation_id = ? ORDER BY seq", [conversation_id]
    ).fetchall()
    return [pending_from_row(row, load) for row in rows]


def find_input(cur: Cursor, conversation_id: ConversationId, input_id: str) -> ItemId | None:
    row = _first(
        cur,
        "SELECT item_id FROM pending_inputs WHERE conversation_id = $1 AND input_id = $2 "
        "UNION ALL SELECT item_id FROM items WHERE conversation_id = $1 AND input_id = $2 LIMIT 1",
        [conversation_id, input_id],
    )
    return row[0] if row else None


# Items


def _item_filter(conversation_id: ConversationId, session_id: SessionId | None) -> tuple[str, list[Any]]:
    if session_id is None:
        return "conversation_id = ?", [conversation_id]
    return "conversation_id = ? AND session_id = ?", [conversation_id, session_id]


def list_items(
    cur: Cursor,
    conversation_id: ConversationId,
    *,
    session_id: SessionId | None,
    cursor: Ordinal | None,
    limit: int,
    order: Order,
    last_ordinal: Ordinal,
    load: Loader,
    max_bytes: int | None = None,
) -> Page[LoggedItem, int]:
    """Ordinals are dense, so the page is first looked for in the window of the next `limit + 1`
    ordinals: zone maps then skip almost every block (about 1 ms instead of 15 ms at the end of 100k
    items). The window is exact when it holds a full page or reaches the end of the log; otherwise
    (a session filter, or a gap left by a failed write) the query runs again without it.

    `max_bytes`: the page ends before the item that would take its JSON past it (`encoded_size`),
    but holds one item at least; its images are read from their files only up to there."""
    desc = order is Order.DESC
    where, params = _item_filter(conversation_id, session_id)
    if cursor is not None:
        where += f" AND ordinal {'<' if desc else '>'} ?"
        params.append(cursor)
    if desc:
        window_end = (last_ordinal + 1 if cursor is None else cursor) - limit - 1
        window = ("ordinal >= ?", window_end, window_end <= 1)
    else:
        window_end = (0 if cursor is None else cursor) + limit + 1
        window = ("ordinal <= ?", window_end, window_end >= last_ordinal)
    sql = f"SELECT {ITEM_SELECT} FROM items WHERE {where} {{}} ORDER BY ordinal {'DESC' if desc else 'ASC'} LIMIT ?"
    rows = cur.execute(sql.format(f"AND {window[0]}"), [*params, window[1], limit + 1]).fetchall()
    if len(rows) <= limit and not window[2]:
        rows = cur.execute(sql.format(""), [*params, limit + 1]).fetchall()
    more = len(rows) > limit
    items: list[LoggedItem] = []
    size = 0
    for row in rows[:limit]:
        logged = logged_item_from_row(row, load)
        if max_bytes is not None:
            size += encoded_size(logged.item)
            if size > max_bytes and items:
                more = True
                break
        items.append(logged)
    return Page(items=items, next_cursor=items[-1].ordinal if more else None)


def get_items(cur: Cursor, conversation_id: ConversationId, item_ids: list[ItemId], load: Loader) -> list[LoggedItem]:
    """In the order of `item_ids`; unknown ids are skipped."""
    if not item_ids:
        return []
    rows = cur.execute(
        f"SELECT item_id, {ITEM_SELECT} FROM items WHERE conversation_id = ? AND list_contains(?::VARCHAR[], item_id)",
        [conversation_id, item_ids],
    ).fetchall()
    found = {row[0]: row[1:] for row in rows}
    return [logged_item_from_row(found[iid], load) for iid in item_ids if iid in found]


def max_ordinal(cur: Cursor, conversation_id: ConversationId) -> Ordinal:
    row = _first(cur, "SELECT coalesce(max(ordinal), 0) FROM items WHERE conversation_id = ?", [conversation_id])
    return int(row[0]) if row else 0


def count_items(cur: Cursor, conversation_id: ConversationId, session_id: SessionId | None) -> int:
    return _count(cur, "items", conversation_id, session_id)


def count_turns(cur: Cursor, conversation_id: ConversationId, session_id: SessionId | None) -> int:
    return _count(cur, "turns", conversation_id, session_id)


def _count(cur: Cursor, table: str, conversation_id: ConversationId, session_id: SessionId | None) -> int:
    where, params = _item_filter(conversation_id, session_id)
    row = _first(cur, f"SELECT count(*) FROM {table} WHERE {where}", params)
    return int(row[0]) if row else 0


def list_model_calls(cur: Cursor, conversation_id: ConversationId, session_id: SessionId | None) -> list[ModelCall]:
    where, params = _item_filter(conversation_id, session_id)
    rows = cur.execute(
        f"SELECT {MODEL_CALL_SELECT} FROM model_calls WHERE {where} ORDER BY started_at, seq", params
    ).fetchall()
    return [model_call_from_row(row) for row in rows]


def delete_conversation(cur: Cursor, conversation_id: ConversationId) -> tuple[bool, list[str]]:
    """A write: run by the writer inside its transaction. Whether the conversation existed, and the
    files it referenced (each goes once no other conversation references it: `BlobStore.collect`)."""
    for table in ("sessions", "turns", "pending_inputs", "items", "model_calls", "streaming_items", "file_changes"):
        cur.execute(f"DELETE FROM {table} WHERE conversation_id = ?", [conversation_id])
    files = cur.execute("DELETE FROM blob_refs WHERE conversation_id = ? RETURNING sha256", [conversation_id])
    referenced = sorted({row[0] for row in files.fetchall()})
    existed = bool(cur.execute("DELETE FROM conversations WHERE id = ? RETURNING id", [conversation_id]).fetchall())
    return existed, referenced
