"""A new database file starts as a copy of `empty-database.zlib`: the file every migration has
already been applied to, compressed (~13 KB for 800 KB). Copying it takes a few ms; applying the
migrations to a new file took ~100 ms of DuckDB work (creating the file, then the schema), on the
path of a first start's first answer.

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
    partial = f"{path}.{os.getpid()}.new"
    try:
        with open(partial, "xb") as out:
            out.write(data)
        os.link(partial, path)
    except FileExistsError:
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(partial)
        except OSError:
            pass
    return True
