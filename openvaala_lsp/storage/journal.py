"""The journal: makes a small batch of writes durable before DuckDB has committed it.

A durable commit in DuckDB is 3-5 statements and a COMMIT, 2-10 ms of its CPU on a busy machine
(measured), and a turn's start and end each waited for one. The journal appends the same batch as
one record and `fdatasync`s it (0.15 ms on a quiet machine), so the writer answers its waiters at
once and DuckDB commits behind them (`writer.py`).

A record names its database (`storage_journal.id`, new for every file) and carries its number, which
DuckDB stores in the same transaction as the batch (`storage_journal.seq`). Opening the database
commits the records whose numbers DuckDB does not have yet (`opening.connect_file`): a kill between
the journal and DuckDB's commit loses nothing the writer answered. A record cut short or damaged ends
the journal (its write never finished: nobody was answered for it); one of another database (the
file was replaced) is not replayed.

Records are written over bytes the file already has: it grows by zeros a chunk ahead of them, and
starts over at its beginning, not by truncating. `fdatasync` of a write that neither grows the file
nor allocates its blocks flushes the data alone, without a commit of the file system's own journal,
which waits for every other file's pending writes (DuckDB's among them): 0.38 -> 0.20-0.28 ms median,
1.6-1.8 -> 0.6-1.3 ms at the 99th percentile beside a writing, syncing process (measured, ext4).
What is left behind the last record (zeros, or older records, numbered lower) ends the reading.

Stdlib only: the opening thread reads it while the rest of the process imports.
"""

from __future__ import annotations

import datetime
import io
import os
import pickle
import struct
import zlib
from typing import Any

_MAGIC = b"OVJ2"  # its crc32 covers the record's number and length too: a record half written over an
# older one must not read as whole, the older payload under a new number
_MAGIC_APPENDED = b"OVJ1"  # an earlier openvaala's, which only appended: the crc32 covers the payload
GROWTH = 256 << 10  # zeros written ahead of the records at a time
_HEADER = struct.Struct("<4sQII")  # magic, seq, payload length, crc32
_NUMBERS = struct.Struct("<QI")
_SAFE_CLASSES = {("datetime", name) for name in ("datetime", "date", "time", "timedelta", "timezone")}


def path_of(database: str) -> str:
    return f"{database}.journal"


class Journal:
    """The journal file of one open database: records written one after the other, each `fdatasync`ed;
    it starts over (`clear`) once DuckDB has every record in it. Used by the writer's journal thread only."""

    def __init__(self, path: str, database_id: str, seq: int) -> None:
        self.path = path
        self.seq = seq
        self._database_id = database_id
        self.size = 0  # bytes of records in the file, from its beginning
        created = not os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._allocated = os.fstat(self._fd).st_size  # bytes the file has, records or not
        if created:  # the file's name must survive a crash as well as its content
            sync_directory(os.path.dirname(path) or ".")
        # opened after DuckDB took every record there (`opening.open_journal`): the next goes first

    def write(self, records: Any) -> int:
        """Durably writes `records` (plain values: tuples, str, numbers, datetimes) as the next
        record; returns its number. Raises OSError, and then the record does not count."""
        seq = self.seq + 1
        payload = _encode((self._database_id, records))
        data = _HEADER.pack(_MAGIC, seq, len(payload), checksum(seq, payload)) + payload
        end = self.size + len(data)
        if end > self._allocated:  # synced with the record: once per GROWTH
            os.pwrite(self._fd, bytes(end + GROWTH - self._allocated), self._allocated)
            self._allocated = end + GROWTH
        os.pwrite(self._fd, data, self.size)
        os.fdatasync(self._fd)
        self.seq, self.size = seq, end
        return seq

    def clear(self) -> None:
        """Starts the file over; only once DuckDB has every record in it. The records left behind
        are numbered lower than the next: a reading stops at the first of them."""
        self.size = 0

    def close(self) -> None:
        os.close(self._fd)


def read(path: str, database_id: str) -> list[tuple[int, Any]]:
    """The records in the journal at `path` as (seq, records), oldest first: those that are whole,
    up to the first that is not (its write never finished, so nobody was answered for it), and of
    this database."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return []
    found: list[tuple[int, Any]] = []
    at = 0
    while at + _HEADER.size <= len(data):
        magic, seq, length, crc = _HEADER.unpack_from(data, at)
        payload = data[at + _HEADER.size : at + _HEADER.size + length]
        if len(payload) != length or crc != (
            checksum(seq, payload) if magic == _MAGIC else zlib.crc32(payload) if magic == _MAGIC_APPENDED else None
        ):
            break
        try:
            owner, records = _SafeUnpickler(io.BytesIO(payload)).load()
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError):
            break  # whole but not ours to read: written by a later openvaala, say
        if owner != database_id or (found and seq != found[-1][0] + 1):
            break  # left by another database, or behind a start over that left older records
        found.append((seq, records))
        at += _HEADER.size + length
    return found


def checksum(seq: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(_NUMBERS.pack(seq, len(payload))))


def _encode(value: Any) -> bytes:
    out = io.BytesIO()
    _StrictPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


class _StrictPickler(pickle.Pickler):
    """Refuses what `_SafeUnpickler` would not read back: a record the journal wrote is always replayable."""

    def reducer_override(self, obj: Any) -> Any:
        cls = obj if isinstance(obj, type) else type(obj)  # a class is pickled by name
        if (cls.__module__, cls.__name__) in _SAFE_CLASSES:
            return NotImplemented  # pickled as usual
        raise pickle.PicklingError(f"journal: a {cls.__module__}.{cls.__name__} is not a value the journal holds")


class _SafeUnpickler(pickle.Unpickler):
    """Builds plain values and datetimes only: a record never runs code when it is read."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_CLASSES:
            return getattr(datetime, name)
        raise pickle.UnpicklingError(f"journal: {module}.{name} is not a value the journal holds")


def sync_directory(directory: str) -> None:
    """A new name in `directory` made durable (after the file's own fsync)."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
