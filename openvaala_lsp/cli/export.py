"""`openvaala export --parquet DIR [--redact] [--machine M] [--user U]`: the analytic views as Parquet,
only what is new since the last export to DIR (`storage/export.py` has the layout and the rules).

Like `openvaala sql`, it asks the runtime host, starting one when none runs (`openvaala/exportUsage`:
the host reads a snapshot on a thread of its own and records the watermark).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import socket
import sys
from pathlib import Path
from typing import Any

from openvaala_lsp.cli import sql as sql_cli
from openvaala_lsp.front.connect import HostLink
from openvaala_lsp.wire.client import ResponseError

CLIENT_NAME = "openvaala export"


class ExportFailed(Exception):
    """The message is for the user."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parquet", type=Path, required=True, metavar="DIR", help="the folder to write into")
    parser.add_argument("--redact", action="store_true", help="leave out error messages too")
    parser.add_argument("--machine", help="the machine column (default: this host's name)")
    parser.add_argument("--user", help="the user column (default: your user name)")


def main(args: argparse.Namespace) -> int:
    directory = args.parquet.expanduser().resolve()
    params = {
        "directory": str(directory),
        "redact": args.redact,
        "machine": args.machine or socket.gethostname(),
        "user": args.user or getpass.getuser(),
    }
    try:
        result = asyncio.run(export(sql_cli.reach_host(), params))
    except (ExportFailed, sql_cli.QueryFailed) as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    written = ", ".join(f"{t['rows']:,} {t['name']} ({t['files']} files)" for t in result["tables"])
    who = f"{result['user']}@{result['machine']}" + (", redacted" if result["redacted"] else "")
    print(f"export {result['number']} to {result['directory']} as {who}: {written}")
    return 0


async def export(link: HostLink, params: dict[str, Any]) -> dict[str, Any]:
    """The `openvaala/exportUsage` result (wire JSON) from the runtime host."""
    try:
        result: dict[str, Any] = await sql_cli.host_request(link, CLIENT_NAME, "openvaala/exportUsage", params)
        return result
    except ResponseError as exc:
        raise ExportFailed(f"export failed: {'; '.join(exc.problems) or exc.message}") from None
    except ConnectionError:
        raise ExportFailed("the openvaala runtime host went away during the export") from None
