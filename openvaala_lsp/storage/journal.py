"""The journal: makes a small batch of writes durable before DuckDB has committed it.

A durable commit in DuckDB is 3-5 statements and a COMMIT, 2-10 ms of its CPU on a busy machine
(measured), and a turn's start and end each wait for one. The journal writes the same batch as one
record and `fdatasync`s it (~0.2 ms), so the writer can answer its waiters at once and let DuckDB
commit behind them. The writer thread commits the batch to DuckDB before it journals the next one, so
the file holds one record, rewritten in place: the batch DuckDB may not have yet.

The record names its database (`storage_journal.id`, new for every file) and its number, which
DuckDB stores in the same transaction as the batch (`storage_journal.seq`). Opening the database
replays a record whose number DuckDB does not have yet (`opening.connect_file`): a kill between the
journal and DuckDB's commit loses nothing the writer answered. A record cut short, damaged, or of
another database (the file was replaced) is ignored: nobody was answered for it.

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

_MAGIC = b"OVJ1"
_HEADER = struct.Struct("<4sQII")  # magic, seq, payload length, crc32 of the payload
_SAFE_CLASSES = {("datetime", name) for name in ("datetime", "date", "time", "timedelta", "timezone")}


def path_of(database: str) -> str:
    return f"{database}.journal"


class Journal:
    """The journal file of one open database; used by the writer thread only."""

    def __init__(self, path: str, database_id: str, seq: int) -> None:
        self.path = path
        self.seq = seq
        self._database_id = database_id
        created = not os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if created:  # the file's name must survive a crash as well as its content
            _sync_directory(os.path.dirname(path) or ".")

    def write(self, records: Any) -> int:
        """Durably writes `records` (plain values: tuples, str, numbers, datetimes) as the next
        record; returns its number. Raises OSError, and then the record does not count."""
        seq = self.seq + 1
        payload = _encode((self._database_id, records))
        os.pwrite(self._fd, _HEADER.pack(_MAGIC, seq, len(payload), zlib.crc32(payload)) + payload, 0)
        os.fdatasync(self._fd)
        self.seq = seq
        return seq

    def close(self) -> None:
        os.close(self._fd)


def read(path: str, database_id: str) -> tuple[int, Any] | None:
    """The record in the journal at `path` as (seq, records); None if there is none that is whole
    and of this database."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, seq, length, crc = _HEADER.unpack_from(data)
    payload = data[_HEADER.size : _HEADER.size + length]
    if magic != _MAGIC or len(payload) != length or zlib.crc32(payload) != crc:
        return None
    try:
        owner, records = _SafeUnpickler(io.BytesIO(payload)).load()
    except (pickle.UnpicklingError, ValueError, TypeError, EOFError):
        return None  # whole but not ours to read: written by a later openvaala, say
    return (seq, records) if owner == database_id else None


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


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
