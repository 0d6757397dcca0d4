"""The two small storage interfaces the runtime depends on.

Ordering and durability contract, shared by every implementation:
- Methods marked *durable* return only after the write is committed (group commit: one commit
  serves every write queued at that moment). Other writes are committed within one flush interval.
- Reads see every write made before them (read-your-writes), committed or not.
- Ordinals are assigned at `append_item` time, start at 1 per conversation, increase by one and
  never repeat, also across restarts and after deletes of other conversations; a failed write
  leaves a gap rather than reusing its ordinals.
- Updates of records that no longer exist do nothing (an update racing a delete never resurrects).
- `get_turns` and `get_items` return what they find in the order of the ids asked for.
- Cursors are exclusive: a page starts strictly after (asc) or before (desc) its cursor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

import attrs

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


@attrs.frozen
class ExportRequest:
    directory: str  # absolute
    machine: str
    user: str
    redact: bool = False


@attrs.frozen
class ExportedTable:
    name: str
    rows: int
    files: int


@attrs.frozen
class ExportOutcome:
    number: int
    tables: list[ExportedTable]
    watermark: tuple[Any, ...]  # the `exports` row to record once the files are written
    exported: list[tuple[Any, ...]]  # and the `exported_rows` of the turns and compactions written


class RecordStorage(Protocol):
    async def create_conversation(self, conversation: Conversation, session: Session) -> None:
        """Durable. Creates the conversation with its main session (ids no row has yet)."""

    async def get_conversation(self, conversation_id: ConversationId) -> Conversation | None: ...

    async def update_conversation(self, conversation: Conversation) -> None:
        """Durable. Replaces the stored row (title, archived, executor settings, model, updated_at)."""

    async def touch_conversation(self, conversation_id: ConversationId, at: dt.datetime) -> None:
        """Sets the last activity time (turn start/end); not durable."""

    async def delete_conversation(self, conversation_id: ConversationId) -> bool:
        """Durable. Removes the conversation and all of its records and logs; False if it did not exist."""

    async def list_conversations(
        self,
        *,
        cursor: str | None,
        limit: int,
        order: Order,
        archived: bool | None,
        query: str | None,
    ) -> Page[ConversationListEntry, str]:
        """Ordered by last activity (else creation) time, then id. `archived` None = all; `query` is a
        case-insensitive substring of the title. `running` is left False (runtime state)."""

    async def create_session(self, session: Session) -> None:
        """Durable. A new session (an id no row has yet)."""

    async def update_session(self, session: Session) -> None:
        """Durable. Replaces the stored row (model)."""

    async def get_session(self, session_id: SessionId) -> Session | None: ...

    async def list_sessions(
        self, conversation_id: ConversationId, *, cursor: str | None, limit: int, order: Order
    ) -> Page[Session, str]:
        """Ordered by creation time, then id."""

    async def save_turn(self, turn: Turn, *, durable: bool = False, new: bool = False, saved: bool = False) -> None:
        """Inserts or replaces the turn (status, ended_at, usage, error change over its life). `new`:
        no row has its id yet; `saved`: its row is committed, so only what changes is written."""

    async def mark_reverted(
        self, conversation_id: ConversationId, turn_ids: list[TurnId], reverted_by: TurnId | None
    ) -> None:
        """Durable. Sets `reverted_by` of those turns of the conversation (None: no longer reverted, a
        redo); unknown ids are skipped. The only way it changes: `save_turn` keeps what is stored."""

    async def get_turns(self, conversation_id: ConversationId, turn_ids: list[TurnId]) -> list[Turn]:
        """The turns found, in the order of `turn_ids`; unknown ids are skipped."""

    async def list_turns(
        self,
        conversation_id: ConversationId,
        *,
        session_id: SessionId | None,
        cursor: str | None,
        limit: int,
        order: Order,
    ) -> Page[Turn, str]:
        """Ordered by start time, then id."""

    async def count_turns(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int: ...

    async def interrupt_running_turns(self, ended_at: dt.datetime) -> list[Turn]:
        """Durable. At startup, before anything else: every turn still `running` becomes `interrupted`
        (reason `runtimeStopped`), and the items a stopped process left streaming (`save_streaming`)
        are logged `interrupted` as last saved; returns the turns."""

    async def save_pending_input(self, pending: PendingInput, *, new: bool = False, durable: bool = True) -> None:
        """Inserts or replaces by item id; durable unless `durable` is false (then with the next commit)."""

    async def remove_pending_input(
        self, conversation_id: ConversationId, item_id: ItemId, *, durable: bool = True
    ) -> None:
        """Durable unless told otherwise (then committed with the next durable write or flush)."""

    async def list_pending_inputs(self, conversation_id: ConversationId) -> list[PendingInput]:
        """In submission order."""

    async def find_input(self, conversation_id: ConversationId, input_id: str) -> ItemId | None:
        """The item id an `inputId` was given, pending or already logged (idempotent submit)."""


class LogStorage(Protocol):
    async def append_item(self, item: Item, *, input_id: str | None = None, durable: bool = False) -> Ordinal:
        """Appends an item to its conversation's log and returns its ordinal."""

    def save_streaming(self, item: Item) -> None:
        """Keeps an item still streaming as it is now, with the next commit (never durable by itself,
        never waited for): each save replaces the one before, and `append_item` of the item removes
        it. What a killed process left is logged by `interrupt_running_turns`."""

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
        """`max_bytes`: the page stops before the item that would take it past this size as JSON
        (`model.encoded_size`); it holds one item at least."""

    async def get_items(self, conversation_id: ConversationId, item_ids: list[ItemId]) -> list[LoggedItem]: ...

    async def last_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        """0 for a conversation without items."""

    async def count_items(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int: ...

    async def append_model_call(self, call: ModelCall) -> None:
        """Not durable; committed within one flush interval."""

    async def list_model_calls(
        self, conversation_id: ConversationId, session_id: SessionId | None = None
    ) -> list[ModelCall]:
        """In call order."""


@attrs.frozen
class SqlColumn:
    name: str
    type: str  # DuckDB's name of the type, e.g. "BIGINT", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]"


# The rows' JSON of a query stays within this many bytes (`truncated`), a quarter of the message
# limit: a row limit alone let six 50 MB values make one 300 MB answer.
MAX_RESULT_BYTES = 16 << 20


@attrs.frozen
class SqlResult:
    """Rows of JSON values (see `sql_values`); `truncated`: more rows existed than are here, or a value
    was cut."""

    columns: list[SqlColumn]
    rows: list[list[Any]]
    truncated: bool


class SqlStorage(Protocol):
    async def query(
        self, sql: str, parameters: list[Any], limit: int, *, max_bytes: int = MAX_RESULT_BYTES
    ) -> SqlResult:
        """Runs one read-only statement on its own cursor and thread: it sees what was committed when
        it started, never waits for the writer and never holds it up. At most `limit` rows and
        `max_bytes` of JSON (a long value is cut to its column's share). Raises `QueryError` for a
        statement that is not read-only or fails, `StorageOutOfMemory`, `StorageClosedError` if the
        store closes meanwhile. Cancelling the caller (or its timeout) interrupts the query."""

    async def export_usage(self, request: ExportRequest) -> ExportOutcome:
        """Writes the analytic views' rows that are new for `request.directory` as Parquet and records
        the watermark (`storage/export.py`); never holds up the writer."""


class Storage(RecordStorage, LogStorage, SqlStorage, Protocol):
    """One store serving the three interfaces (one DuckDB file, one writer)."""

    async def import_conversation(
        self, conversation: Conversation, sessions: Iterable[Session], turns: Iterable[Turn], items: Iterable[Item]
    ) -> list[Ordinal]:
        """Durable, in one transaction: a whole conversation (a fork). Returns the items' ordinals."""

    def flush(self) -> Awaitable[None]:
        """Makes everything queued so far durable (a kill -9 after it loses none of it): the commit is
        asked for at the call, not at the first await (a turn's start commits while its model request
        is being built). A read made after it sees it (it waits for DuckDB's commit if need be)."""

    async def close(self) -> None:
        """Commits, checkpoints and closes. Idempotent."""


T = TypeVar("T")
C = TypeVar("C")
ALL_PAGE_SIZE = 500


async def every_page(fetch: Callable[[C | None], Awaitable[Page[T, C]]]) -> list[T]:
    """Every entry of a paged listing: `fetch(cursor)` pages, from the start, until the last."""
    entries: list[T] = []
    cursor: C | None = None
    while True:
        page = await fetch(cursor)
        entries.extend(page.items)
        if page.next_cursor is None:
            return entries
        cursor = page.next_cursor


async def all_sessions(storage: RecordStorage, conversation_id: ConversationId) -> list[Session]:
    """A conversation's sessions, oldest first."""
    return await every_page(
        lambda cursor: storage.list_sessions(conversation_id, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC)
    )


async def all_session_items(storage: LogStorage, conversation_id: ConversationId, session_id: SessionId) -> list[Item]:
    """Every saved item of a session, in log order."""
    logged = await every_page(
        lambda cursor: storage.list_items(
            conversation_id, session_id=session_id, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC
        )
    )
    return [entry.item for entry in logged]


async def context_items(storage: Storage, conversation_id: ConversationId, session_id: SessionId) -> list[Item]:
    """The saved items of a session that the model's context holds: every one but those of turns a
    revert took out (`Turn.reverted_by`), which stay in the log for people."""
    items = await all_session_items(storage, conversation_id, session_id)
    turns = await every_page(
        lambda cursor: storage.list_turns(
            conversation_id, session_id=session_id, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC
        )
    )
    reverted = {turn.id for turn in turns if turn.reverted_by is not None}
    return [item for item in items if item.turn_id not in reverted] if reverted else items
