"""`openvaala-lsp`: the process an editor spawns, speaking LSP-framed JSON-RPC on stdin/stdout."""

from __future__ import annotations

import argparse
import logging
import sys

from openvaala_lsp import __version__


def _configure_logging(level: str, log_file: str | None) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    if level != "DEBUG":
        # pygls logs every message body at INFO and every answered error with a traceback
        logging.getLogger("pygls").setLevel(logging.WARNING)
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="openvaala-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"openvaala-lsp {__version__}")
    parser.add_argument("--standalone", action="store_true", help="run the runtime in this process (the default today)")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log-file", help="log to this file instead of stderr")
    args = parser.parse_args(argv)
    _configure_logging(args.log_level, args.log_file)
    from openvaala_lsp.server import stdio

    return stdio.main()


if __name__ == "__main__":
    sys.exit(main())
