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
    from openvaala_lsp.cli.args import CliParser

    parser = CliParser(prog="openvaala-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"openvaala-lsp {__version__}")
    parser.add_argument(
        "--standalone", action="store_true", help="run the runtime in this process instead of the shared host"
    )
    levels = ["DEBUG", "INFO", "WARNING", "ERROR"]
    parser.add_argument("--log-level", default="WARNING", type=str.upper, choices=levels, help="default WARNING")
    parser.add_argument("--log-file", help="with --standalone or --acp: log to this file instead of stderr")
    parser.add_argument("--acp", action="store_true", help="speak the Agent Client Protocol (ACP v1) instead of LSP")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # A start-up trick that stays, with the front's others: an editor's warm start is mostly this
    # process's own start, and editors start it without arguments, so argparse is loaded only for them.
    options = _parser().parse_args(args) if args else None
    standalone = os.environ.get(STANDALONE_ENV) == "1" or (options is not None and options.standalone)
    acp_mode = options is not None and options.acp
    if standalone or acp_mode:
        from openvaala_lsp.logs import configure_logging

        try:
            configure_logging(options.log_level if options else "WARNING", options.log_file if options else None)
        except OSError as exc:  # the log file cannot be opened: a mistake in the command line
            from openvaala_lsp.cli.args import fail

            fail("openvaala-lsp", f"--log-file: cannot write {exc.filename}: {exc.strerror}")
        if acp_mode:  # ACP's own front: an LSP client of the host (or of a runtime in this process)
            from openvaala_lsp.acp_front.main import main as acp

            return acp(standalone=standalone)
        from openvaala_lsp.server import stdio

        return stdio.main()
    from openvaala_lsp.front.main import main as front

    return front()


if __name__ == "__main__":
    sys.exit(main())
