"""`openvaala export --parquet DIR [--redact] [--machine M] [--user U]`: the analytic views as Parquet,
only what is new since the last export to DIR (`storage/export.py` has the layout and the rules).

Like `openvaala sql`, it asks the runtime host, starting one when none runs (`openvaala/exportUsage`:
the host reads a snapshot on a thread of its own and records the watermark). `DESCRIPTION` is what
`--help` tells a user.
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
from openvaala_lsp.cli.args import plural, user_path
from openvaala_lsp.front.connect import HostLink
from openvaala_lsp.wire.client import ResponseError

CLIENT_NAME = "openvaala export"
DESCRIPTION = """\
Writes what your agents cost and did as Parquet files under DIR, for a team to pool in one folder
and read with DuckDB, Spark or anything that reads Parquet: one row per model call (tokens, cost,
latency), per turn, per compaction and per file an agent changed (its path and line counts).
Files go to DIR/<table>/day=YYYY-MM-DD/<user>@<machine>-....parquet, each row labelled with your
user and machine names. Each export writes only what is new since the last export to the same DIR,
so it can run daily from cron into a shared or synced folder.

No prompts, answers, file contents or tool output are ever exported; error messages are kept with
anything shaped like a key removed, and --redact leaves them out too."""


class ExportFailed(Exception):
    """The message is for the user."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--parquet", type=_folder, required=True, metavar="DIR", help="the folder to write into (made if missing)"
    )
    parser.add_argument("--redact", action="store_true", help="leave out error messages too")
    parser.add_argument("--machine", help="the machine column (default: this host's name)")
    parser.add_argument("--user", help="the user column (default: your user name)")


def _folder(text: str) -> Path:
    path = user_path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {text}")
    return path.resolve()


def main(args: argparse.Namespace) -> int:
    directory = args.parquet
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
    print(summary(result))
    return 0


def summary(result: dict[str, Any]) -> str:
    """`export 1 to DIR as alice@laptop: 5,000 model_calls (90 files), ...`"""
    written = ", ".join(f"{t['rows']:,} {t['name']} ({plural(t['files'], 'file')})" for t in result["tables"])
    who = f"{result['user']}@{result['machine']}" + (", redacted" if result["redacted"] else "")
    return f"export {result['number']} to {result['directory']} as {who}: {written}"


async def export(link: HostLink, params: dict[str, Any]) -> dict[str, Any]:
    """The `openvaala/exportUsage` result (wire JSON) from the runtime host."""
    try:
        result: dict[str, Any] = await sql_cli.host_request(link, CLIENT_NAME, "openvaala/exportUsage", params)
        return result
    except ResponseError as exc:
        raise ExportFailed(f"export failed: {'; '.join(exc.problems) or exc.message}") from None
    except ConnectionError:
        raise ExportFailed("the openvaala runtime host went away during the export") from None
