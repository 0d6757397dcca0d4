"""`DuckDBStorage`: the `Storage` of the runtime in one DuckDB file.

Threads: the event loop only queues writes (see `writer.py`) and awaits futures; the writer's
journal thread makes them durable and its DuckDB thread commits them in batches; one reader thread
runs the queries on its own cursor. DuckDB 2.0 refuses
overlapping calls on one connection, so each thread has its own `cursor()`. The SQL of
`openvaala/query` (`sql.py`) runs on four more threads, each query on a cursor of its own, so a long
query holds up neither the writer nor the reader.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import duckdb

from openvaala_lsp.model import (
    Conversation,
    ConversationId,
    ConversationListEntry,
    Item,
    ItemId,
    ItemStatus,
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
    utcnow,
)
from openvaala_lsp.storage import blobs, codec, export, queries
from openvaala_lsp.storage.codec import (
    ACTIVITY_COLUMNS,
    BLOB_REF_COLUMNS,
    CONVERSATIONS,
    FILE_CHANGE_COLUMNS,
    ITEM_COLUMNS,
    MODEL_CALL_COLUMNS,
    PENDING_INPUTS,
    SESSIONS,
    STREAMING_ITEMS,
    TURN_CHANGING_COLUMNS,
    TURNS,
    Row,
    as_utc,
    conversation_row,
    file_change_rows,
    item_row,
    model_call_row,
    pending_row,
    session_row,
    streaming_row,
    turn_changes_row,
    turn_row,
)
from openvaala_lsp.storage.errors import (
    InvalidCursor,
    QueryCancelled,
    StorageClosedError,
    StorageError,
    StorageLockedError,
)
from openvaala_lsp.storage.interfaces import MAX_RESULT_BYTES, ExportOutcome, ExportRequest, SqlResult
from openvaala_lsp.storage.journal import Journal
from openvaala_lsp.storage.opening import connect_file, out_of_memory, wal_of
from openvaala_lsp.storage.sql import QueryJob, stop
from openvaala_lsp.storage.writer import Append, BatchWriter, Delete, Files, Op, Put, Run, Update

__all__ = ["DuckDBStorage", "InvalidCursor", "StorageClosedError", "StorageError", "StorageLockedError"]

T = TypeVar("T")

QUERY_THREADS = 4  # a quick query need not wait behind slow ones: a connection runs at most 2 at once
EXPORTED_IDS_PER_WRITE = 2000  # a few ms of appending each: a turn's writes go in between

# Files this process has open: DuckDB would hand a second open of the same file the same database
# instance, and two writers assigning ordinals for one file would repeat them.
_open_paths: set[str] = set()
_REVERTED_COLUMNS = ("id", "reverted_by")


class DuckDBStorage:
    """Open with `await DuckDBStorage.open(path)`, close with `await storage.close()`."""

    def __init__(
        self,
        path: str,
        con: duckdb.DuckDBPyConnection,
        writer_cursor: duckdb.DuckDBPyConnection,
        reader_cursor: duckdb.DuckDBPyConnection,
        flush_interval: float,
        journal: Journal | None = None,
    ) -> None:
        self.path = path
        self._path_key = path
        self._con = con
        # a database in memory keeps no files: its big parts stay in its rows
        self._blobs = None if path == ":memory:" else blobs.BlobStore(blobs.directory_of(path))
        wal = None if path == ":memory:" else wal_of(path)
        self._writer = BatchWriter(writer_cursor, flush_interval, journal, self._blobs, wal)
        self._reader_cursor = reader_cursor
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openvaala-storage-reader")
        self._query_pool = ThreadPoolExecutor(max_workers=QUERY_THREADS, thread_name_prefix="openvaala-storage-query")
        self._queries: dict[QueryJob, Future[SqlResult]] = {}
        self._exporting = asyncio.Lock()  # one export at a time: each reads the last one's watermark
        self._ordinals: dict[ConversationId, Ordinal] = {}  # last ordinal given, per conversation loaded
        self._ordinal_loads: dict[ConversationId, asyncio.Future[Ordinal]] = {}
        self._streaming: set[ItemId] = set()  # items with a row in streaming_items, not logged yet
        self._closed = False
        self._close_task: asyncio.Future[None] | None = None

    @classmethod
    async def open(cls, path: str, flush_interval: float = 0.05) -> DuckDBStorage:
        """Opens (creating and migrating) the file. Raises StorageLockedError if another process has it."""
        key = "" if path == ":memory:" else await asyncio.to_thread(os.path.realpath, path)
        if key in _open_paths:
            raise StorageLockedError(path, os.getpid(), "this process")
        if key:  # every ":memory:" connection is a database of its own
            _open_paths.add(key)
        try:
            con, writer_cursor, reader_cursor, journal = await asyncio.to_thread(connect_file, path)
        except BaseException:
            _open_paths.discard(key)
            raise
        storage = cls(path, con, writer_cursor, reader_cursor, flush_interval, journal)
        storage._path_key = key
        storage._writer.start()
        return storage

    # Plumbing

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosedError()

    async def _write(self, ops: list[Op], *, durable: bool) -> Any:
        self._check_open()
        future = self._writer.submit(ops, durable=durable)
        return None if future is None else await _wait(future)

    async def _read(self, query: Callable[[duckdb.DuckDBPyConnection], T], *, barrier: bool = True) -> T:
        self._check_open()
        if barrier:
            await self._visible()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._reader, query, self._reader_cursor)
        except RuntimeError:
            if self._closed:  # the reader was shut down by close() while this read waited
                raise StorageClosedError() from None
            raise
        except duckdb.OutOfMemoryException as exc:
            raise out_of_memory(exc) from exc

    async def _visible(self) -> None:
        """Read-your-writes: what is queued, and what the journal holds, is committed to DuckDB first."""
        if self._writer.has_pending():
            await _wait(self._writer.barrier(visible=True))

    def flush(self) -> asyncio.Future[None]:
        self._check_open()
        return _awaitable(self._writer.barrier())

    async def checkpoint(self) -> None:
        """Commits what is queued and folds the WAL into the file (keeps the next open fast)."""
        self._check_open()
        await _wait(self._writer.checkpoint())

    async def close(self) -> None:
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close())
        await asyncio.shield(self._close_task)

    async def _close(self) -> None:
        self._closed = True
        try:
            await _wait(self._writer.barrier())
        finally:
            # running queries stop first: their transactions would make the final CHECKPOINT fail too
            await self._stop_queries()
            # the reader goes first: its cursor's transactions would make the final CHECKPOINT fail
            await asyncio.to_thread(self._reader.shutdown, True)
            await asyncio.to_thread(self._reader_cursor.close)
            try:
                await _wait(self._writer.stop())  # final commit and CHECKPOINT
            finally:
                await asyncio.to_thread(self._con.close)
                _open_paths.discard(self._path_key)

    # SQL

    async def query(
        self, sql: str, parameters: list[Any], limit: int, *, max_bytes: int = MAX_RESULT_BYTES
    ) -> SqlResult:
        self._check_open()
        if self._writer.answered_unseen():  # a turn's end, say: the query must count it
            await _wait(self._writer.barrier(visible=True))
        job = QueryJob(self._con.cursor(), sql, parameters, limit, max_bytes=max_bytes)  # `con` is idle after open
        try:
            done = self._query_pool.submit(job.run)
        except RuntimeError:  # the pool was shut down by close()
            job.close()
            raise StorageClosedError() from None
        self._queries[job] = done
        try:
            return await asyncio.wrap_future(done)
        except asyncio.CancelledError:  # the caller went or timed out, or close() came first
            await stop(job, done)
            task = asyncio.current_task()
            if self._closed and task is not None and not task.cancelling():
                raise StorageClosedError() from None  # close() cancelled it before it started
            raise
        except QueryCancelled:
            raise StorageClosedError() from None  # only close() cancels a job whose caller still waits
        finally:
            del self._queries[job]
            if done.cancelled():
                job.close()  # it never started; `run` closes its own cursor

    async def export_usage(self, request: ExportRequest) -> ExportOutcome:
        """Writes the analytic views' new rows as Parquet (see `export.py`) from a snapshot read on a
        cursor and thread of its own, like a query; then records the watermark, durably."""
        self._check_open()
        async with self._exporting:
            # ids left by an export that failed part way; then what was queued before is in the snapshot
            await self._write([Run(lambda cur: export.forget_unfinished(cur, request.directory))], durable=False)
            await self._visible()
            now = dt.datetime.now(dt.UTC)
            outcome = await asyncio.get_running_loop().run_in_executor(
                self._query_pool, export.export, self._con.cursor(), self.path, request, now
            )
            for start in range(0, len(outcome.exported), EXPORTED_IDS_PER_WRITE):
                chunk = outcome.exported[start : start + EXPORTED_IDS_PER_WRITE]
                await self._write([Append("exported_rows", export.EXPORTED_ROW_COLUMNS, chunk)], durable=False)
            await self._write([Append("exports", export.EXPORT_COLUMNS, [outcome.watermark])], durable=True)
            return outcome

    async def _stop_queries(self) -> None:
        self._query_pool.shutdown(wait=False, cancel_futures=True)
        await asyncio.gather(*(stop(job, done) for job, done in list(self._queries.items())))

    # Ordinals: assigned here, in the loop thread, in the order the appends are queued

    async def _load_last_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        cached = self._ordinals.get(conversation_id)
        if cached is not None:
            return cached
        load = self._ordinal_loads.get(conversation_id)
        if load is None:
            # no append of this conversation can be queued yet, so the committed max is the last one
            load = asyncio.ensure_future(
                self._read(lambda cur: queries.max_ordinal(cur, conversation_id), barrier=False)
            )
            self._ordinal_loads[conversation_id] = load
            load.add_done_callback(lambda _: self._ordinal_loads.pop(conversation_id, None))
        loaded = await asyncio.shield(load)
        return self._ordinals.setdefault(conversation_id, loaded)

    def _take_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        """The next ordinal of a loaded conversation; the caller queues its row before any await."""
        ordinal = self._ordinals.get(conversation_id, 0) + 1
        self._ordinals[conversation_id] = ordinal
        return ordinal

    # RecordStorage

    async def create_conversation(self, conversation: Conversation, session: Session) -> None:
        # new ids: plain inserts (an upsert of the conversation's columns was INSERT OR REPLACE, 3-5 ms
        # under load against ~1 for the insert; the session's a delete and an insert)
        new_conversation = Put(CONVERSATIONS, conversation_row(conversation), new=True)
        await self._write([new_conversation, Put(SESSIONS, session_row(session), new=True)], durable=True)
        # a new conversation has no items: its first append need not read the last ordinal back
        self._ordinals.setdefault(conversation.id, 0)

    async def get_conversation(self, conversation_id: ConversationId) -> Conversation | None:
        return await self._read(lambda cur: queries.get_conversation(cur, conversation_id))

    async def update_conversation(self, conversation: Conversation) -> None:
        # an UPDATE, not an upsert: a read-modify-write racing a delete must not bring the row back
        row = conversation_row(conversation)
        await self._write([Update(CONVERSATIONS, CONVERSATIONS.columns, row)], durable=True)

    async def touch_conversation(self, conversation_id: ConversationId, at: dt.datetime) -> None:
        await self._write([Update(CONVERSATIONS, ACTIVITY_COLUMNS, (conversation_id, as_utc(at)))], durable=False)

    async def delete_conversation(self, conversation_id: ConversationId) -> bool:
        existed, files = await self._write(
            [Run(lambda cur: queries.delete_conversation(cur, conversation_id))], durable=True
        )
        self._ordinals.pop(conversation_id, None)
        if files and self._blobs is not None:  # once the delete is committed: files go only after their rows
            store = self._blobs
            await self._write([Run(lambda cur: store.collect(cur, files))], durable=False)
        return bool(existed)

    async def list_conversations(
        self,
        *,
        cursor: str | None,
        limit: int,
        order: Order,
        archived: bool | None,
        query: str | None,
    ) -> Page[ConversationListEntry, str]:
        return await self._read(
            lambda cur: queries.list_conversations(
                cur, cursor=cursor, limit=limit, order=order, archived=archived, query=query
            )
        )

    async def create_session(self, session: Session) -> None:
        await self._write([Put(SESSIONS, session_row(session), new=True)], durable=True)

    async def update_session(self, session: Session) -> None:
        await self._write([Update(SESSIONS, SESSIONS.columns, session_row(session))], durable=True)

    async def get_session(self, session_id: SessionId) -> Session | None:
        return await self._read(lambda cur: queries.get_session(cur, session_id))

    async def list_sessions(
        self, conversation_id: ConversationId, *, cursor: str | None, limit: int, order: Order
    ) -> Page[Session, str]:
        return await self._read(
            lambda cur: queries.list_sessions(cur, conversation_id, cursor=cursor, limit=limit, order=order)
        )

    async def save_turn(self, turn: Turn, *, durable: bool = False, new: bool = False, saved: bool = False) -> None:
        if saved:
            await self._write([Update(TURNS, TURN_CHANGING_COLUMNS, turn_changes_row(turn))], durable=durable)
        else:
            await self._write([Put(TURNS, turn_row(turn), new=new)], durable=durable)

    async def mark_reverted(
        self, conversation_id: ConversationId, turn_ids: list[TurnId], reverted_by: TurnId | None
    ) -> None:
        # turn ids are unique across conversations: the key alone finds the row
        ops: list[Op] = [Update(TURNS, _REVERTED_COLUMNS, (tid, reverted_by)) for tid in turn_ids]
        await self._write(ops, durable=True)

    async def get_turns(self, conversation_id: ConversationId, turn_ids: list[TurnId]) -> list[Turn]:
        return await self._read(lambda cur: queries.get_turns(cur, conversation_id, list(turn_ids)))

    async def list_turns(
        self,
        conversation_id: ConversationId,
        *,
        session_id: SessionId | None,
        cursor: str | None,
        limit: int,
        order: Order,
    ) -> Page[Turn, str]:
        return await self._read(
            lambda cur: queries.list_turns(
                cur, conversation_id, session_id=session_id, cursor=cursor, limit=limit, order=order
            )
        )

    async def interrupt_running_turns(self, ended_at: dt.datetime) -> list[Turn]:
        self._check_open()
        at = as_utc(ended_at)
        # what they streamed, as last saved, is logged in the commit that ends them: a kill between
        # the two would log it twice, or not at all
        left = [codec.item_from_json(payload) for payload in await self._read(queries.streaming_payloads)]
        for item in left:
            item.status = ItemStatus.INTERRUPTED
            if item.conversation_id not in self._ordinals:
                await self._load_last_ordinal(item.conversation_id)
        sealed = self._sealed(left)
        rows = [
            item_row(item, self._take_ordinal(item.conversation_id), None, payload)
            for item, (payload, _) in zip(left, sealed, strict=True)
        ]
        found = [(item, blobs_of) for item, (_, blobs_of) in zip(left, sealed, strict=True)]
        ops = self._with_files([Append("items", ITEM_COLUMNS, rows)], found)
        turns: list[Turn] = await self._write(
            [*ops, Run(lambda cur: queries.interrupt_running_turns(cur, at))], durable=True
        )
        return turns

    async def save_pending_input(self, pending: PendingInput, *, new: bool = False, durable: bool = True) -> None:
        self._check_open()
        [(payload, found)] = self._sealed([pending.item])  # on the loop, as `append_item`'s
        put = Put(PENDING_INPUTS, pending_row(pending, payload), new=new)
        await self._write(self._with_files([put], [(pending.item, found)]), durable=durable)

    async def remove_pending_input(
        self, conversation_id: ConversationId, item_id: ItemId, *, durable: bool = True
    ) -> None:
        await self._write([Delete(PENDING_INPUTS, item_id)], durable=durable)

    async def list_pending_inputs(self, conversation_id: ConversationId) -> list[PendingInput]:
        return await self._read(lambda cur: queries.list_pending_inputs(cur, conversation_id, self._load))

    async def find_input(self, conversation_id: ConversationId, input_id: str) -> ItemId | None:
        return await self._read(lambda cur: queries.find_input(cur, conversation_id, input_id))

    # LogStorage

    async def append_item(self, item: Item, *, input_id: str | None = None, durable: bool = False) -> Ordinal:
        self._check_open()
        if item.conversation_id not in self._ordinals:
            await self._load_last_ordinal(item.conversation_id)
        # the row is encoded now: the caller may mutate `item` after the call returns. Its big parts
        # are hashed here, on the loop (~4 ms a screenshot), not in a thread: a write queued meanwhile
        # would overtake this one
        [(payload, found)] = self._sealed([item])
        ordinal = self._take_ordinal(item.conversation_id)
        row = item_row(item, ordinal, input_id, payload)
        ops = self._with_files([Append("items", ITEM_COLUMNS, [row])], [(item, found)])
        if changes := file_change_rows(item):  # in the commit that logs the result reporting them
            ops.append(Append("file_changes", FILE_CHANGE_COLUMNS, changes))
        if item.id in self._streaming:  # its streaming row goes in the commit that logs it
            self._streaming.discard(item.id)
            ops.append(Delete(STREAMING_ITEMS, item.id))
        await self._write(ops, durable=durable)
        return ordinal

    def save_streaming(self, item: Item) -> None:
        self._check_open()
        new = item.id not in self._streaming
        self._streaming.add(item.id)
        self._writer.submit([Put(STREAMING_ITEMS, streaming_row(item, utcnow()), new=new)], durable=False)

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
        last = await self._load_last_ordinal(conversation_id)
        return await self._read(
            lambda cur: queries.list_items(
                cur,
                conversation_id,
                session_id=session_id,
                cursor=cursor,
                limit=limit,
                order=order,
                last_ordinal=last,
                load=self._load,
                max_bytes=max_bytes,
            )
        )

    async def get_items(self, conversation_id: ConversationId, item_ids: list[ItemId]) -> list[LoggedItem]:
        return await self._read(lambda cur: queries.get_items(cur, conversation_id, list(item_ids), self._load))

    def _load(self, sha256: str) -> str | None:
        """The data of a big part (on the reader thread)."""
        return None if self._blobs is None else self._blobs.read(sha256)

    async def last_ordinal(self, conversation_id: ConversationId) -> Ordinal:
        self._check_open()
        return await self._load_last_ordinal(conversation_id)

    async def count_items(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        return await self._read(lambda cur: queries.count_items(cur, conversation_id, session_id))

    async def count_turns(self, conversation_id: ConversationId, session_id: SessionId | None = None) -> int:
        return await self._read(lambda cur: queries.count_turns(cur, conversation_id, session_id))

    async def append_model_call(self, call: ModelCall) -> None:
        await self._write([Append("model_calls", MODEL_CALL_COLUMNS, [model_call_row(call)])], durable=False)

    async def list_model_calls(
        self, conversation_id: ConversationId, session_id: SessionId | None = None
    ) -> list[ModelCall]:
        return await self._read(lambda cur: queries.list_model_calls(cur, conversation_id, session_id))

    async def import_conversation(
        self, conversation: Conversation, sessions: Iterable[Session], turns: Iterable[Turn], items: Iterable[Item]
    ) -> list[Ordinal]:
        return await self.bulk_write(conversations=[conversation], sessions=sessions, turns=turns, items=items)

    # Bulk import (seeding, imports): the same rows, ordinals and transaction path as the API above

    async def bulk_write(
        self,
        *,
        conversations: Iterable[Conversation] = (),
        sessions: Iterable[Session] = (),
        turns: Iterable[Turn] = (),
        items: Iterable[Item] = (),
        input_ids: Mapping[ItemId, str] | None = None,
        model_calls: Iterable[ModelCall] = (),
        activity: Mapping[ConversationId, dt.datetime] | None = None,
    ) -> list[Ordinal]:
        """Durably writes everything in one transaction; returns the ordinals given to `items`, in order.

        Equivalent to create/save/append calls made one by one, minus the per-call overhead.
        """
        self._check_open()
        item_list = list(items)
        for conversation_id in dict.fromkeys(item.conversation_id for item in item_list):
            if conversation_id not in self._ordinals:
                await self._load_last_ordinal(conversation_id)
        # an import's items are new: hashing them in a thread lets nothing else overtake them that matters
        values = [codec.unstructured(item) if codec.needs_files(item) else None for item in item_list]
        sealed = await asyncio.to_thread(self._seal_values, values) if any(values) else [(None, [])] * len(values)
        ids = input_ids or {}
        ordinals: list[Ordinal] = []
        item_rows: list[Row] = []
        for item, (payload, _) in zip(item_list, sealed, strict=True):  # no await from here on: the
            ordinal = self._take_ordinal(item.conversation_id)  # reserved ordinals are queued in order
            ordinals.append(ordinal)
            item_rows.append(item_row(item, ordinal, ids.get(item.id), payload))
        ops: list[Op] = [Put(CONVERSATIONS, conversation_row(c)) for c in conversations]
        ops += [Put(SESSIONS, session_row(s)) for s in sessions]
        ops += [Put(TURNS, turn_row(t)) for t in turns]
        ops += [Update(CONVERSATIONS, ACTIVITY_COLUMNS, (cid, as_utc(at))) for cid, at in (activity or {}).items()]
        ops.append(Append("items", ITEM_COLUMNS, item_rows))
        ops.append(Append("model_calls", MODEL_CALL_COLUMNS, [model_call_row(m) for m in model_calls]))
        found = [(item, blobs_of) for item, (_, blobs_of) in zip(item_list, sealed, strict=True)]
        await self._write(self._with_files(ops, found), durable=True)
        return ordinals

    # Big parts (images, long texts): files beside the database, see `blobs.py`

    def _sealed(self, items: list[Item]) -> list[tuple[str | None, list[codec.Blob]]]:
        """Each item's payload with its big parts as references, and their data; (None, []) for an
        item without any (its payload is encoded as always) and in a database in memory."""
        values = [codec.unstructured(item) if codec.needs_files(item) else None for item in items]
        return self._seal_values(values)

    def _seal_values(self, values: list[dict[str, Any] | None]) -> list[tuple[str | None, list[codec.Blob]]]:
        if self._blobs is None:
            return [(None, [])] * len(values)
        return [(None, []) if value is None else codec.seal(value) for value in values]

    @staticmethod
    def _with_files(ops: list[Op], found: list[tuple[Item, list[codec.Blob]]]) -> list[Op]:
        """`ops` with the files their items reference (written first) and the rows naming them."""
        refs = [row for item, blobs_of in found for row in codec.blob_ref_rows(item, blobs_of)]
        if not refs:
            return ops
        files = [blob for _, blobs_of in found for blob in blobs_of]
        return [Files(files), *ops, Append("blob_refs", BLOB_REF_COLUMNS, refs)]


async def _wait(future: Future[T]) -> T:
    try:
        return await _awaitable(future)
    except duckdb.OutOfMemoryException as exc:
        raise out_of_memory(exc) from exc


def _awaitable(future: Future[T]) -> asyncio.Future[T]:
    """The writer's future for the event loop. One already resolved (a barrier with nothing queued or
    committing) is handed over as it is, without the loop round trip of `wrap_future`."""
    if not future.done():
        return asyncio.wrap_future(future)
    done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    if (error := future.exception()) is not None:
        done.set_exception(error)
    else:
        done.set_result(future.result())
    return done
