"""Where the server processes log: stderr or a file, quiet by default (stdout is the protocol)."""

from __future__ import annotations

import sys


def configure_logging(level: str, log_file: str | None) -> None:
    import logging

    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    if level != "DEBUG":
        # HTTP clients log every request at INFO (model calls, MCP over HTTP)
        for name in ("httpx", "httpx2", "httpcore", "httpcore2"):
            logging.getLogger(name).setLevel(logging.WARNING)
