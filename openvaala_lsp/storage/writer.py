"""The writer: every write is queued here and committed in batches (group commit).

Callers never touch DuckDB: `submit` only coalesces the write into the pending batch under a lock the
writer holds just long enough to swap batches. A batch is taken when a durable write (or a barrier)
asks for it, when the oldest queued write is `flush_interval` old, or when the batch is big.

Inside a batch, record writes are coalesced per key (last write wins) because DuckDB silently keeps
the *first* of two rows with the same key in one upsert. A task (a read-modify-write such as a
conversation delete) closes the current segment, so it sees every write queued before it and none
queued after it; segments are applied in order in one transaction.

A small batch that someone waits for is made durable by the journal (`journal.py`) first: its
waiters are answered then, and DuckDB commits it behind them, on a thread of its own, so the next
batch is journaled while DuckDB works. DuckDB's thread lets journaled batches gather for up to
LAND_DELAY and commits them in one transaction: a turn's quick steps then run beside one DuckDB commit
instead of one per step. A read waits for that commit (`barrier(visible=True)`), and asks for it at
once, as a checkpoint, a batch that is not journaled and the writer's stop do.

DuckDB refusing a batch it was given after the journal is a bug in what was written (a NULL in a
NOT NULL column, say): the batch is applied write by write, and a write DuckDB still refuses is
dropped and logged, as it would have been (with its whole batch) before.

The files of a batch's images (`Files`, see `blobs.py`) are made durable by the journal thread
before anything else happens to the batch: before its journal record, before DuckDB's commit. A
batch whose files cannot be written fails whole, as a batch DuckDB refuses.
"""

from __future__ import annotations

import collections
import itertools
import logging
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import attrs
import duckdb

from openvaala_lsp.paths import make_private
from openvaala_lsp.storage import journal
from openvaala_lsp.storage.blobs import BlobStore
from openvaala_lsp.storage.codec import Blob, Row, Table
from openvaala_lsp.storage.errors import StorageClosedError, StorageError

log = logging.getLogger(__name__)

Task = Callable[[duckdb.DuckDBPyConnection], Any]

# Past this many queued rows the batch is committed at once: bounds memory and commit latency.
MAX_BATCH_ROWS = 2000
FEW_ROWS = 16  # up to this many rows of one table in a batch go by plain statements, more by appender
# Up to this many rows a batch someone waits for goes through the journal (a turn's writes are a
# handful); bigger ones (imports, exports) commit straight to DuckDB, as nobody waits on them at a keystroke.
JOURNAL_ROWS = 64
JOURNAL_BYTES = 1 << 20  # past this size the journal starts over, once DuckDB has every record in it
# A journaled batch waits this long for more to commit with it, unless someone waits for DuckDB
LAND_DELAY = 0.05
MAX_IN_FLIGHT = 64  # batches taken and not yet in DuckDB: past it, the journal thread waits for DuckDB
CHECKPOINT_ATTEMPTS = 20
CHECKPOINT_RETRY_DELAY = 0.01


@attrs.frozen
class Append:
    """Rows for an append-only log table."""

    table: str
    columns: tuple[str, ...]
    rows: Sequence[Row]


@attrs.frozen
class Put:
    """Inserts or replaces a whole record (`row[0]` is its key). `new`: the key was just made, so no
    row can have it yet (a plain insert; deleted in the same batch, it never reaches the table)."""

    table: Table
    row: Row
    new: bool = False


@attrs.frozen
class Delete:
    table: Table
    key: str


@attrs.frozen
class Update:
    """Sets `columns` of an existing record (`row[0]` is its key); a missing record stays missing."""

    table: Table
    columns: tuple[str, ...]
    row: Row


@attrs.frozen
class Run:
    """Runs inside the batch transaction after every write queued before it; its result resolves the future."""

    task: Task


@attrs.frozen
class Files:
    """Files the batch's rows reference (`blobs.py`): durable before the rows are."""

    blobs: Sequence[Blob] = attrs.field(repr=lambda blobs: f"<{len(blobs)} files>")


Op = Append | Put | Delete | Update | Run | Files


@attrs.define
class _RecordChange:
    deleted: bool = False  # deleted in this segment: the delete is applied before any upsert
    row: Row | None = None  # the last row put, None if the last write was the delete
    new: bool = False  # no row had the key before this batch


@attrs.define
class _Segment:
    records: dict[Table, dict[str, _RecordChange]] = attrs.Factory(dict)
    updates: dict[tuple[Table, tuple[str, ...]], dict[str, Row]] = attrs.Factory(dict)
    appends: dict[tuple[str, tuple[str, ...]], list[Row]] = attrs.Factory(dict)
    task: Task | None = None
    task_future: Future[Any] | None = None


@attrs.define
class _Batch:
    segments: list[_Segment] = attrs.Factory(lambda: [_Segment()])
    futures: list[Future[Any]] = attrs.Factory(list)  # resolved with None once durable (journal or commit)
    visible: list[Future[Any]] = attrs.Factory(list)  # resolved with None once DuckDB has committed
    checkpoints: list[Future[Any]] = attrs.Factory(list)  # resolved after a CHECKPOINT that follows the commit
    writes: list[Sequence[Op]] = attrs.Factory(list)  # each submit's ops, in order (for the journal)
    rows: int = 0
    files: list[Blob] = attrs.Factory(list)
    failed: BaseException | None = None  # its files could not be written: it is not committed
    urgent: bool = False
    first_at: float = 0.0
    # once taken by the journal thread:
    ready: bool = False  # the journal thread is done with it: the DuckDB thread may commit it
    seq: int | None = None  # its journal record: its futures are resolved
    last: bool = False  # the last batch: the writer stops after it
    taken_at: float = 0.0

    @property
    def has_writes(self) -> bool:
        return self.rows > 0

    @property
    def has_tasks(self) -> bool:
        return any(seg.task is not None for seg in self.segments)

    def add(self, ops: Sequence[Op], future: Future[Any] | None = None) -> bool:
        """Adds one submit's writes (kept whole in `writes` for the journal); True if a task took
        `future` (it resolves it with its result)."""
        taken = False
        for op in ops:
            taken = self._add(op, future) or taken
        self.writes.append(ops)
        return taken

    def _add(self, op: Op, future: Future[Any] | None) -> bool:
        seg = self.segments[-1]
        match op:
            case Append(table, columns, rows):
                seg.appends.setdefault((table, columns), []).extend(rows)
                self.rows += len(rows)
            case Put(table, row, new):
                changes = seg.records.setdefault(table, {})
                change = changes.get(row[0])
                if change is None:
                    changes[row[0]] = _RecordChange(row=row, new=new)
                else:
                    change.row = row
                self.rows += 1
            case Delete(table, key):
                changes = seg.records.setdefault(table, {})
                earlier = changes.pop(key, None)
                if earlier is None or not earlier.new:  # a new row deleted at once never reaches the table
                    changes[key] = _RecordChange(deleted=True)
                self.rows += 1
            case Update(table, columns, row):
                seg.updates.setdefault((table, columns), {})[row[0]] = row
                self.rows += 1
            case Run(task):
                seg.task, seg.task_future = task, future
                self.segments.append(_Segment())
                self.rows += 1
                return True
            case Files(blobs):
                self.files.extend(blobs)
        return False


def _new_future() -> Future[Any]:
    future: Future[Any] = Future()
    # RUNNING: an asyncio cancellation of the waiter cannot cancel it, so the writer can always resolve it
    future.set_running_or_notify_cancel()
    return future


class BatchWriter:
    """Two threads: the journal thread takes batches off the queue in order (and journals the small
    ones someone waits for, answering them); the DuckDB thread commits them in the same order, the
    journaled ones that gathered meanwhile (`_next_group`) in one transaction. Neither waits for the
    other's disk."""

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        flush_interval: float,
        journal: journal.Journal | None = None,
        blobs: BlobStore | None = None,
        wal: str | None = None,
    ) -> None:
        self._cur = cursor
        self._interval = flush_interval
        self._journal = journal
        self._blobs = blobs
        self._wal = wal  # DuckDB's WAL, made anew after each checkpoint as the umask says
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # wakes the journal thread: a batch to take
        self._landable = threading.Condition(lock)  # wakes the DuckDB thread: a batch to commit
        self._batch = _Batch()
        self._flight: collections.deque[_Batch] = collections.deque()  # taken, not yet committed to DuckDB
        self._landed_seq = journal.seq if journal is not None else 0  # DuckDB has every record up to it
        self._stopping = False
        self._dead: BaseException | None = None
        self._stopped: Future[None] = _new_future()
        self._journal_thread = threading.Thread(target=self._run_journal, name="openvaala-storage-journal", daemon=True)
        self._thread = threading.Thread(target=self._run, name="openvaala-storage-writer", daemon=True)

    def start(self) -> None:
        self._journal_thread.start()
        self._thread.start()

    # Called from the event loop thread (never blocks on DuckDB)

    def submit(self, ops: Sequence[Op], *, durable: bool) -> Future[Any] | None:
        """Queues `ops` atomically (same transaction). Durable, or with a `Run` (at most one): returns a
        future resolved once durable, or after the commit with the task's result."""
        future = _new_future() if durable or any(isinstance(op, Run) for op in ops) else None
        with self._cond:
            self._check_accepting()
            batch = self._batch
            was_idle = batch.rows == 0
            taken = batch.add(ops, future)
            if batch.rows and was_idle:
                batch.first_at = time.monotonic()
            if future is not None:
                if not taken:
                    batch.futures.append(future)
                batch.urgent = True
            if batch.urgent or was_idle or batch.rows >= MAX_BATCH_ROWS:
                self._cond.notify()
        return future

    def barrier(self, *, visible: bool = False) -> Future[Any]:
        """Resolved once every write queued so far is durable (with the batch's error if it failed);
        `visible`: once DuckDB has committed them too, so a read sees them. At once when there is
        nothing to wait for (no round trip through the writer's threads)."""
        with self._cond:
            self._check_accepting()
            if not self._batch.has_writes and not any(visible or b.seq is None for b in self._flight):
                done: Future[Any] = Future()
                done.set_result(None)
                return done
        return self._request(checkpoint=False, visible=visible)

    def checkpoint(self) -> Future[Any]:
        """Resolved after everything queued so far is committed and a CHECKPOINT has run."""
        return self._request(checkpoint=True)

    def answered_unseen(self) -> bool:
        """The journal has answered for writes DuckDB has not committed yet: a read would miss them."""
        with self._cond:
            return any(b.seq is not None for b in self._flight)

    def has_pending(self) -> bool:
        """Writes queued or not yet committed to DuckDB. Raises StorageError once the writer died: a
        read could miss what it answered for."""
        with self._cond:
            if self._dead is not None:
                raise StorageError(f"the storage writer stopped: {self._dead}") from self._dead
            return bool(self._flight) or self._batch.has_writes

    def stop(self) -> Future[None]:
        """Commits what is queued, checkpoints and closes the writer's cursor; refuses later submits."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        return self._stopped

    # Batching

    def _check_accepting(self) -> None:
        if self._dead is not None:
            raise StorageError(f"the storage writer stopped: {self._dead}") from self._dead
        if self._stopping:
            raise StorageClosedError()

    def _request(self, *, checkpoint: bool, visible: bool = False) -> Future[Any]:
        future = _new_future()
        with self._cond:
            self._check_accepting()
            batch = self._batch
            (batch.checkpoints if checkpoint else batch.visible if visible else batch.futures).append(future)
            batch.urgent = True
            self._cond.notify()
        return future

    # The journal thread

    def _take(self) -> _Batch:
        """The next batch, in flight from here on (a barrier asked meanwhile waits for it)."""
        with self._cond:
            while True:
                batch = self._batch
                if len(self._flight) >= MAX_IN_FLIGHT and not self._stopping:
                    self._cond.wait()  # DuckDB is far behind: answer no more until it catches up
                    continue
                if self._stopping or batch.urgent:
                    break
                if batch.has_writes:
                    left = batch.first_at + self._interval - time.monotonic()
                    if left <= 0 or batch.rows >= MAX_BATCH_ROWS:
                        break
                    self._cond.wait(left)
                else:
                    self._cond.wait()
            self._batch = _Batch()
            batch.last = self._stopping
            batch.taken_at = time.monotonic()
            if self._dead is None:
                self._flight.append(batch)
            return batch

    def _run_journal(self) -> None:
        try:
            while True:
                batch = self._take()
                if self._dead is not None:  # the DuckDB thread died: nothing more is answered
                    _fail(batch, self._dead)
                    return
                self._store_files(batch)
                if batch.failed is None:
                    self._journaled(batch)
                with self._cond:
                    batch.ready = True
                    self._landable.notify()
                if batch.last:
                    return
        except BaseException as exc:  # a bug: report it to every waiter rather than leave them hanging
            log.exception("storage journal thread died")
            self._die(exc)
        finally:
            if self._journal is not None:
                self._journal.close()

    def _store_files(self, batch: _Batch) -> None:
        """The batch's files, durable before its rows (pinned until DuckDB has them, see `_landed`)."""
        if not batch.files:
            return
        if self._blobs is None:
            batch.failed = StorageError("this storage keeps no files")
            return
        try:
            self._blobs.store(batch.files)
        except OSError as exc:
            log.error("storage: a batch's files could not be written; the batch fails", exc_info=exc)
            batch.failed = exc

    def _journaled(self, batch: _Batch) -> None:
        """Puts a small batch someone waits for in the journal and answers them (`batch.seq`); any
        other batch is answered once DuckDB has committed it."""
        if self._journal is None or not batch.futures or not batch.has_writes:
            return
        if batch.rows > JOURNAL_ROWS or batch.has_tasks:
            return
        with self._cond:
            caught_up = self._landed_seq == self._journal.seq
        try:
            if caught_up and self._journal.size > JOURNAL_BYTES:
                self._journal.clear()  # every record in it is in DuckDB
            records = [[_encode(op) for op in ops if not isinstance(op, Files)] for ops in batch.writes]
            seq = self._journal.write(records)
        except (OSError, pickle.PicklingError):
            log.warning("storage: the journal did not take a batch; it commits to DuckDB first", exc_info=True)
            return
        with self._cond:
            batch.seq = seq
        _resolve(batch.futures)

    # The DuckDB thread

    def _run(self) -> None:
        try:
            while True:
                group = self._next_group()
                if group is None:
                    break
                self._commit(group)
                if group[-1].last:
                    break
        except BaseException as exc:  # a bug: report it to every waiter rather than leave them hanging
            log.exception("storage writer died")
            self._die(exc)
            self._cur.close()
            self._stopped.set_exception(exc)
            return
        try:
            self._checkpoint_now()
        except duckdb.Error:
            # everything is committed; the WAL is replayed at the next open
            log.warning("storage: CHECKPOINT at close failed", exc_info=True)
        finally:
            self._cur.close()
        self._journal_thread.join()  # it closes the journal once it has handed over its last batch
        if self._dead is not None:
            self._stopped.set_exception(self._dead)
        else:
            self._stopped.set_result(None)

    def _next_group(self) -> list[_Batch] | None:
        """The oldest batch the journal thread is done with; with the journaled ones right after it
        if it is journaled (one transaction for all). None once the journal thread has died.

        A journaled batch waits up to LAND_DELAY for more to join it, unless someone waits for
        DuckDB (a read, a checkpoint, a batch that is not journaled, the last one): its waiters are
        answered, and a turn's quick steps (a tool call, its result, the next request) then do not
        share the machine with a DuckDB commit of each of their writes."""
        with self._cond:
            while True:
                if self._dead is not None:
                    return None
                if self._flight and self._flight[0].ready:
                    left = self._flight[0].taken_at + LAND_DELAY - time.monotonic()
                    if left <= 0 or self._stopping or self._awaited():
                        break
                    self._landable.wait(left)
                else:
                    self._landable.wait()
            group = [self._flight[0]]
            if group[0].seq is not None:
                for batch in itertools.islice(self._flight, 1, None):
                    if not batch.ready or batch.seq is None or group[-1].last:
                        break
                    group.append(batch)
            return group

    def _awaited(self) -> bool:
        """Someone waits for DuckDB to commit what is in flight (asked under the lock)."""
        return len(self._flight) >= MAX_IN_FLIGHT // 2 or any(
            batch.visible or batch.checkpoints or batch.last or (batch.ready and batch.seq is None)
            for batch in self._flight
        )

    def _die(self, exc: BaseException) -> None:
        with self._cond:
            self._stopping = True
            self._dead = exc
            batches = [self._batch, *self._flight]
            self._batch, self._flight = _Batch(), collections.deque()
            self._cond.notify()
            self._landable.notify()
        for batch in batches:
            _fail(batch, exc)

    def _commit(self, group: list[_Batch]) -> None:
        if group[0].seq is not None:
            # if this raises, what the journal answered for is in no DuckDB commit: the writer takes
            # nothing more (`_run`), and the journal keeps it for the next open to replay
            _land(self._cur, group)
            self._landed(group)
            for batch in group:
                _resolve(batch.visible)
                if batch.checkpoints:
                    self._checkpoint(batch.checkpoints)
            return
        [batch] = group
        if batch.failed is not None:
            self._landed(group)
            _fail(batch, batch.failed)
            return
        try:
            results = _transaction(self._cur, batch.segments) if batch.has_writes else []
        except Exception as exc:
            log.error("storage: a batch of %d writes failed and was rolled back", batch.rows, exc_info=exc)
            self._landed(group)
            _fail(batch, exc)
            return
        self._landed(group)
        for future, result in results:
            future.set_result(result)
        _resolve([*batch.futures, *batch.visible])
        if batch.checkpoints:
            self._checkpoint(batch.checkpoints)

    def _landed(self, group: list[_Batch]) -> None:
        """The batches are committed (or rolled back): out of flight before their waiters wake, so a
        barrier they ask for next finds nothing in flight and is done at once."""
        if self._wal is not None:
            make_private(self._wal)  # a stat: the commit that made a new WAL closes it to others
        with self._cond:
            for _ in group:
                self._flight.popleft()
            self._cond.notify()  # the journal thread, if it waits for DuckDB (MAX_IN_FLIGHT)
            self._landed_seq = max([self._landed_seq, *(b.seq for b in group if b.seq is not None)])
        if self._blobs is not None:
            for batch in group:
                self._blobs.release(batch.files)

    def _checkpoint_now(self) -> None:
        # CHECKPOINT fails while another transaction is open (a read in flight); reads are short
        for _ in range(CHECKPOINT_ATTEMPTS - 1):
            try:
                self._cur.execute("CHECKPOINT")
                return
            except duckdb.TransactionException:
                time.sleep(CHECKPOINT_RETRY_DELAY)
        self._cur.execute("CHECKPOINT")

    def _checkpoint(self, futures: list[Future[Any]]) -> None:
        try:
            self._checkpoint_now()
        except Exception as exc:
            for future in futures:
                future.set_exception(exc)
        else:
            for future in futures:
                future.set_result(None)


def _apply(cur: duckdb.DuckDBPyConnection, seg: _Segment) -> None:
    """Appenders for many rows; for a few (a turn's usual writes), plain statements, which skip
    the appender's set-up: a one-row upsert costs 2.6 ms by appender, 0.8 ms as a delete and an
    insert (measured on DuckDB 2.0)."""
    for table, changes in seg.records.items():
        deleted = [(key,) for key, change in changes.items() if change.deleted]
        rows = [change.row for change in changes.values() if change.row is not None]
        if len(deleted) + len(rows) <= FEW_ROWS:
            _few_records(cur, table, changes)
            continue
        if deleted:
            _flush(cur.appender(table.name, action="delete", key=[table.key]), deleted)
        if rows:
            _flush(cur.appender(table.name, columns=list(table.columns), action="upsert"), rows)
    for (table, columns), by_key in seg.updates.items():
        if len(by_key) <= FEW_ROWS:
            assignments = ", ".join(f"{column} = ?" for column in columns[1:])
            _statement(
                cur,
                f"UPDATE {table.name} SET {assignments} WHERE {table.key} = ?",
                [(*row[1:], row[0]) for row in by_key.values()],
            )
        else:
            appender = cur.appender(table.name, columns=list(columns), action="update", key=[table.key])
            _flush(appender, by_key.values())
    for (name, columns), rows in seg.appends.items():
        if not rows:
            continue
        if len(rows) <= FEW_ROWS:
            _statement(cur, _insert(name, columns), rows)
        else:
            _flush(cur.appender(name, columns=list(columns)), rows)


def _land(cur: duckdb.DuckDBPyConnection, group: Sequence[_Batch]) -> None:
    """Commits journaled batches in one transaction, with the last one's record number; one by one,
    and write by write, if DuckDB refuses them (see the module's doc)."""
    seq = group[-1].seq
    try:
        _transaction(cur, [seg for batch in group for seg in batch.segments], seq)
        return
    except Exception:
        if len(group) > 1:
            for batch in group:
                _land(cur, [batch])
            return
        log.error(
            "storage: DuckDB refused a batch of %d writes the journal holds; applying them one by one",
            group[0].rows,
            exc_info=True,
        )
    for ops in group[0].writes:
        one = _Batch()
        one.add(ops)
        try:
            _transaction(cur, one.segments)
        except Exception:
            log.error("storage: dropped %d writes DuckDB refuses: %r", one.rows, ops, exc_info=True)
    _transaction(cur, [], seq)


def _transaction(
    cur: duckdb.DuckDBPyConnection, segments: Sequence[_Segment], seq: int | None = None
) -> list[tuple[Future[Any], Any]]:
    """Applies `segments` in one transaction, each one's task after its writes, with journal record
    `seq` if one is given; returns the tasks' futures with their results. Rolled back (never
    committed: DuckDB would return normally and roll back) and raised if DuckDB or a task refuses."""
    results: list[tuple[Future[Any], Any]] = []
    try:
        cur.execute("BEGIN")
        for seg in segments:
            _apply(cur, seg)
            if seg.task is not None and seg.task_future is not None:
                results.append((seg.task_future, seg.task(cur)))
        if seq is not None:
            _statement(cur, _SET_SEQ, [(seq,)])
        cur.execute("COMMIT")
    except Exception:
        _rollback(cur)
        raise
    return results


def replay(cur: duckdb.DuckDBPyConnection, records: list[tuple[int, Any]]) -> None:
    """Commits the journal's records (`journal.read`) DuckDB does not have: the writer was killed
    between the two."""
    group = []
    for seq, writes in records:
        batch = _Batch(seq=seq)
        for encoded in writes:
            batch.add([_decode(op) for op in encoded])
        group.append(batch)
    _land(cur, group)
    log.warning(
        "storage: %d writes a stopped writer had answered for came from the journal", sum(b.rows for b in group)
    )


_SET_SEQ = "UPDATE storage_journal SET seq = ?"


def _encode(op: Op) -> tuple[Any, ...]:
    """An op as plain values for the journal (never a `Run`: a batch with a task is not journaled)."""
    match op:
        case Append(table, columns, rows):
            return ("append", table, columns, list(rows))
        case Put(table, row, new):
            return ("put", _table(table), row, new)
        case Delete(table, key):
            return ("delete", _table(table), key)
        case Update(table, columns, row):
            return ("update", _table(table), columns, row)
    raise TypeError(f"the journal holds no {type(op).__name__}")


def _decode(value: tuple[Any, ...]) -> Op:
    match value:
        case ("append", table, columns, rows):
            return Append(table, columns, rows)
        case ("put", table, row, new):
            return Put(Table(*table), row, new)
        case ("delete", table, key):
            return Delete(Table(*table), key)
        case ("update", table, columns, row):
            return Update(Table(*table), columns, row)
    raise ValueError(f"journal: no write of the shape {value[:1]!r}")


def _table(table: Table) -> tuple[Any, ...]:
    return (table.name, table.key, table.columns, table.whole)


def _resolve(futures: list[Future[Any]]) -> None:
    for future in futures:
        future.set_result(None)


def _rollback(cur: duckdb.DuckDBPyConnection) -> None:
    try:
        cur.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction left to roll back (the failed statement was BEGIN or COMMIT)


def _fail(batch: _Batch, exc: BaseException) -> None:
    for future in _waiters(batch):
        if not future.done():  # answered already: the journal had it
            future.set_exception(exc)


def _waiters(batch: _Batch) -> list[Future[Any]]:
    tasks = [seg.task_future for seg in batch.segments if seg.task_future is not None]
    return [*batch.futures, *batch.visible, *batch.checkpoints, *tasks]


def _few_records(cur: duckdb.DuckDBPyConnection, table: Table, changes: dict[str, _RecordChange]) -> None:
    # a new row is inserted; a whole row replaced by a delete and an insert (the cheapest upsert); a
    # partial one by INSERT OR REPLACE, which keeps the columns it does not carry
    doomed = [(key,) for key, c in changes.items() if c.deleted or (table.whole and c.row is not None and not c.new)]
    inserted = [c.row for c in changes.values() if c.row is not None and (c.new or table.whole)]
    replaced = [c.row for c in changes.values() if c.row is not None and not (c.new or table.whole)]
    if doomed:
        _statement(cur, f"DELETE FROM {table.name} WHERE {table.key} = ?", doomed)
    if inserted:
        _statement(cur, _insert(table.name, table.columns), inserted)
    if replaced:
        _statement(cur, _insert(table.name, table.columns, "INSERT OR REPLACE"), replaced)


# The writer's statements, parsed once: a handful of shapes (a table's insert, delete, update of
# some columns), each run on every commit. Parsing is ~15% of a one-row insert (0.47 vs 0.55 ms,
# measured on DuckDB 2.0); a race between two stores' writers at worst parses one twice.
_parsed: dict[str, duckdb.Statement] = {}


def _statement(cur: duckdb.DuckDBPyConnection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    statement = _parsed.get(sql)
    if statement is None:
        [statement] = cur.extract_statements(sql)
        _parsed[sql] = statement
    # one row by `execute`: `executemany` costs a third more for it (0.68 vs 1.03 ms, a 28-column insert)
    if len(rows) == 1:
        cur.execute(statement, rows[0])
    else:
        cur.executemany(statement, rows)


def _insert(table: str, columns: Sequence[str], verb: str = "INSERT") -> str:
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _flush(appender: duckdb.Appender, rows: Any) -> None:
    appender.append_rows(rows)
    appender.flush()
