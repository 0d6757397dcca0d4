"""Rebuilds openvaala_lsp/storage/empty-database.zlib, the file a new database is copied from:
every migration applied to a new file, compressed. Run it after adding a migration."""

from __future__ import annotations

import os
import sys
import tempfile
import zlib

from openvaala_lsp.storage import template
from openvaala_lsp.storage.migrations import migrate
from openvaala_lsp.storage.opening import CONFIG, connect


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "empty.duckdb")
        con = connect(path, CONFIG)
        try:
            con.execute("SET GLOBAL TimeZone = 'UTC'")
            migrate(con, path)
            con.execute("UPDATE schema_version SET applied_at = NULL")  # set when a copy is made
        finally:
            con.close()  # checkpoints: the file holds everything, no WAL
        with open(path, "rb") as made, open(template.TEMPLATE, "wb") as compressed:
            compressed.write(zlib.compress(made.read(), 9))
    sys.stdout.write(f"wrote {template.TEMPLATE}\n")


if __name__ == "__main__":
    main()
