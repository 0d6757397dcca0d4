"""The journal file on its own: what `read` gives back of a file cut anywhere, or written over."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from openvaala_lsp.storage import journal

DB = "db-1"
AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def records(n: int) -> list[list[tuple[object, ...]]]:
    """What the writer puts in a record: each submit's ops as plain values."""
    return [[("append", "items", ("a", "b"), [(f"r{i}", i, AT, None, True, 1.5)])] for i in range(n)]


def written(path: Path, n: int, database_id: str = DB, seq: int = 0) -> list[int]:
    """Writes `n` records from the file's beginning; returns where each ends."""
    file = journal.Journal(str(path), database_id, seq=seq)
    sizes = []
    try:
        for record in records(n):
            file.write(record)
            sizes.append(file.size)
    finally:
        file.close()
    return sizes


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=6),
    cut=st.floats(min_value=0, max_value=1),
    beyond=st.sampled_from(["nothing", "zeros", "older records"]),
)
def test_a_file_cut_anywhere_reads_back_the_records_written_whole(
    tmp_path_factory: pytest.TempPathFactory, count: int, cut: float, beyond: str
) -> None:
    path = tmp_path_factory.mktemp("j") / "db.journal"
    base = 0
    if beyond == "older records":  # a file started over: more, shorter records were there before
        older = journal.Journal(str(path), DB, seq=0)
        for n in range(12):
            older.write([("delete", "items", n)])
        older.close()
        base = 12  # DuckDB has them: opening skips them
    before = path.read_bytes() if path.exists() else b""
    sizes = written(path, count, seq=base)
    keep = int(sizes[-1] * cut)
    data = path.read_bytes()
    # a kill mid-write (the record was never synced, nobody was answered): the file ends there, or
    # what the file had there before follows
    rest = {"nothing": b"", "zeros": bytes(len(data) - keep), "older records": before[keep:]}[beyond]
    path.write_bytes(data[:keep] + rest)
    whole = sum(1 for size in sizes if size <= keep)
    found = [(seq, record) for seq, record in journal.read(str(path), DB) if seq > base]
    assert found == list(zip(range(base + 1, base + 1 + whole), records(count)[:whole], strict=True))


def test_a_damaged_byte_ends_the_journal_there(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    sizes = written(path, 3)
    data = bytearray(path.read_bytes())
    data[sizes[1] + 30] ^= 0xFF  # inside the third record
    path.write_bytes(bytes(data))
    assert [seq for seq, _ in journal.read(str(path), DB)] == [1, 2]


def test_records_of_another_database_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    written(path, 2, database_id="db-other")
    assert journal.read(str(path), DB) == []


def test_reopening_starts_the_file_over_and_numbers_go_on(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    written(path, 3)
    file = journal.Journal(str(path), DB, seq=3)  # opened once DuckDB has records 1-3
    try:
        assert file.write(records(1)[0]) == 4
    finally:
        file.close()
    assert [seq for seq, _ in journal.read(str(path), DB)] == [4]  # over record 1; 2 and 3 are behind it


def test_records_are_written_over_bytes_the_file_has_and_it_grows_a_chunk_ahead(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    file = journal.Journal(str(path), DB, seq=0)
    try:
        file.write(records(1)[0])
        grown = os.path.getsize(path)
        assert grown == file.size + journal.GROWTH  # zeros ahead of the record, synced with it
        while file.size + 200 < grown:
            file.write(records(1)[0])
            assert os.path.getsize(path) == grown  # the records after it: no growth, no new blocks
        file.write([("append", "items", ("a",), [("x" * journal.GROWTH,)])])  # past the end: grows again
        assert os.path.getsize(path) == file.size + journal.GROWTH
        assert len(journal.read(str(path), DB)) == file.seq
        file.clear()  # DuckDB has them all
        assert file.write(records(1)[0]) == file.seq and os.path.getsize(path) > file.size
        assert [seq for seq, _ in journal.read(str(path), DB)] == [file.seq]
    finally:
        file.close()


def test_a_value_the_journal_could_not_read_back_is_refused_when_written(tmp_path: Path) -> None:
    file = journal.Journal(str(tmp_path / "db.journal"), DB, seq=0)
    try:
        with pytest.raises(pickle.PicklingError, match="not a value the journal holds"):
            file.write([("append", "items", ("a",), [(Path("/x"),)])])
        assert file.seq == 0 and file.write(records(1)[0]) == 1  # nothing was written
    finally:
        file.close()


def test_a_record_that_would_run_code_when_read_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    written(path, 1)
    payload = pickle.dumps((DB, [os.system]))  # a function: loading it imports a module by name
    header = journal._HEADER.pack(journal._MAGIC, 2, len(payload), journal.checksum(2, payload))
    with open(path, "ab") as file:
        file.write(header + payload)
    assert [seq for seq, _ in journal.read(str(path), DB)] == [1]


def test_records_an_earlier_openvaala_appended_are_read(tmp_path: Path) -> None:
    path = tmp_path / "db.journal"
    with open(path, "wb") as file:  # its format: the crc32 of the payload alone
        for seq, record in enumerate(records(2), start=1):
            payload = pickle.dumps((DB, record), protocol=pickle.HIGHEST_PROTOCOL)
            file.write(journal._HEADER.pack(b"OVJ1", seq, len(payload), zlib.crc32(payload)) + payload)
    assert journal.read(str(path), DB) == list(enumerate(records(2), start=1))
