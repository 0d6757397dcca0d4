"""A new database file starts as a copy of `empty-database.zlib`: the file every migration has
already been applied to, compressed (~13 KB for 800 KB). Copying it takes a few ms; creating the
file and applying the migrations took ~100 ms of DuckDB work (measured), at a first start and in
every test that makes a database.

The template is rebuilt with `python scripts/build_database_template.py` whenever a migration is
added; tests/test_storage.py fails while it lags behind the migrations. A template that cannot be
read leaves the file to be created by the migrations, as without one.
"""

from __future__ import annotations

import os
import zlib

TEMPLATE = os.path.join(os.path.dirname(__file__), "empty-database.zlib")


def copy_to(path: str) -> bool:
    """Writes the template to `path`, which does not exist yet; False (nothing written) if the
    template is missing or damaged, or cannot be written there. A file that appears meanwhile is
    left as it is (the copy is linked into place, never renamed over it)."""
    try:
        with open(TEMPLATE, "rb") as template:
            data = zlib.decompress(template.read())
    except (OSError, zlib.error):
        return False
    partial = f"{path}.{os.getpid()}.new"  # this process's own: a stale one is overwritten
    try:
        with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "wb") as out:
            out.write(data)  # the history is the user's alone: 0600 from the start
        os.link(partial, path)
    except FileExistsError:  # from the link: the file was made meanwhile
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(partial)
        except OSError:
            pass
    return True
