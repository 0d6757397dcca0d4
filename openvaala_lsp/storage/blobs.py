"""Big strings of items (images, long texts) in files of their own beside the database.

A screenshot stored inline made a row of 7 MiB: a page of them ran DuckDB out of memory. Instead the
row holds a reference where the string stood, `{"blob": <sha256>, "bytes": N}` (which strings:
`codec.seal`), and the string, exactly as it travels on the wire (an image's base64 text, a text's
UTF-8), is the file `<database>.blobs/<sha256>` (0600, in a 0700 directory). Equal data is one file.

Files are written and fsynced by the writer's journal thread before the batch that references them
is journaled or committed (`writer.py`), so a row the runtime acknowledged never points to a file a
kill took away. `blob_refs` lists which conversation (and item) references which file; a file goes
when the last conversation that references it is deleted (`collect`), never while a batch that
references it is on its way to DuckDB (pinned). Files no row references (a kill between a file and
its row) are swept at the next open.
"""

from __future__ import annotations

import collections
import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from openvaala_lsp.storage.journal import sync_directory

SUFFIX = ".blobs"
_PARTIAL = ".partial"


def directory_of(database: str) -> str:
    return database + SUFFIX


def address(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_address(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


class BlobStore:
    """The files of one database. `store` runs on the writer's journal thread, `release` and
    `collect` on its DuckDB thread, `read` on the reader's: a lock keeps a file that a batch in
    flight references from being collected."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._pinned: collections.Counter[str] = collections.Counter()

    def path(self, sha256: str) -> str:
        return os.path.join(self.directory, sha256)

    def store(self, blobs: Sequence[tuple[str, bytes]]) -> None:
        """Makes every file durable (written, fsynced, renamed into place, the directory fsynced);
        each stays pinned until `release`. Raises OSError (the batch then fails)."""
        with self._lock:
            self._pinned.update(sha256 for sha256, _ in blobs)
        written = False
        for sha256, data in dict(blobs).items():
            path = self.path(sha256)
            try:
                if os.stat(path).st_size == len(data):
                    continue  # whole: a file only ever appears by its rename
            except FileNotFoundError:
                pass
            self.ensure_directory()
            partial = f"{path}.{threading.get_ident()}{_PARTIAL}"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fdatasync(fd)
            finally:
                os.close(fd)
            os.replace(partial, path)
            written = True
        if written:
            sync_directory(self.directory)

    def release(self, blobs: Iterable[tuple[str, Any]]) -> None:
        """The batch that pinned them is committed (or failed)."""
        with self._lock:
            for sha256, _ in blobs:
                self._pinned[sha256] -= 1
                if self._pinned[sha256] <= 0:
                    del self._pinned[sha256]

    def read(self, sha256: str) -> str | None:
        """The part's data as it was given; None when its file is gone (or the name is no address:
        a row never leads outside the directory)."""
        if not _is_address(sha256):
            return None
        try:
            with open(self.path(sha256), "rb") as file:
                return file.read().decode()
        except FileNotFoundError:
            return None

    def collect(self, cur: Any, candidates: Iterable[str]) -> int:
        """Deletes the files of `candidates` that no row references any more and no batch in flight
        needs (on the DuckDB thread, which alone commits: what it reads is what is committed)."""
        wanted = sorted(set(candidates))
        if not wanted:
            return 0
        rows = cur.execute(
            "SELECT DISTINCT sha256 FROM blob_refs WHERE list_contains(?::VARCHAR[], sha256)", [wanted]
        ).fetchall()
        referenced = {row[0] for row in rows}
        deleted = 0
        with self._lock:
            for sha256 in wanted:
                if sha256 in referenced or self._pinned.get(sha256):
                    continue
                try:
                    os.unlink(self.path(sha256))
                    deleted += 1
                except FileNotFoundError:
                    pass
        return deleted

    def sweep(self, cur: Any) -> None:
        """At open, before any write: deletes what a kill left behind (a file no row references, a
        file half written)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        referenced = {row[0] for row in cur.execute("SELECT DISTINCT sha256 FROM blob_refs").fetchall()}
        for name in names:
            if name.endswith(_PARTIAL) or (_is_address(name) and name not in referenced):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except FileNotFoundError:
                    pass

    def ensure_directory(self) -> None:
        try:
            os.mkdir(self.directory, 0o700)
        except FileExistsError:
            return
        os.chmod(self.directory, 0o700)  # whatever the umask
        sync_directory(os.path.dirname(self.directory) or ".")
