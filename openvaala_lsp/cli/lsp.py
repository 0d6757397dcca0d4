"""`openvaala-lsp`: the process an editor spawns, speaking LSP-framed JSON-RPC on stdin/stdout.

By default it is the thin front that relays to the user's runtime host (starting it if needed);
`--standalone` (or `OPENVAALA_STANDALONE=1` in the environment, for editors that can only set that)
runs the runtime in this process instead.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from openvaala_lsp import __version__

STANDALONE_ENV = "OPENVAALA_STANDALONE"

if TYPE_CHECKING:
    import argparse


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="openvaala-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"openvaala-lsp {__version__}")
    parser.add_argument(
        "--standalone", action="store_true", help="run the runtime in this process instead of the shared host"
    )
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log-file", help="with --standalone: log to this file instead of stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # A start-up trick that stays, with the front's others: an editor's warm start is mostly this
    # process's own start, and editors start it without arguments, so argparse is loaded only for them.
    options = _parser().parse_args(args) if args else None
    if os.environ.get(STANDALONE_ENV) == "1" or (options is not None and options.standalone):
        from openvaala_lsp.logs import configure_logging

        configure_logging(options.log_level if options else "WARNING", options.log_file if options else None)
        from openvaala_lsp.server import stdio

        return stdio.main()
    from openvaala_lsp.front.main import main as front

    return front()


if __name__ == "__main__":
    sys.exit(main())
