"""`openvaala export --parquet DIR [--redact] [--machine M] [--user U]`: the analytic views as Parquet,
only what is new since the last export to DIR (`storage/export.py` has the layout and the rules).

Like `openvaala sql`, it goes to the runtime host when one runs (`openvaala/exportUsage`: the host
reads a snapshot on a thread of its own and records the watermark), else it opens the database itself
while a shared hold on `host.lock` keeps hosts from starting, runs the same export and records the
watermark in the file. No host is started for it.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import socket
import sys
from pathlib import Path
from typing import Any

from openvaala_lsp import paths, sql_cli
from openvaala_lsp.front.connect import FrontError, HostLink, reach_or_hold
from openvaala_lsp.hostwire import front_hello
from openvaala_lsp.lsp_peer import PeerError
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import ParamsError, structure, unstructure
from openvaala_lsp.rundir import UnsafeRunDir, ensure_private, run_dir

CLIENT_NAME = "openvaala export"


class ExportFailed(Exception):
    """The message is for the user."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parquet", type=Path, required=True, metavar="DIR", help="the folder to write into")
    parser.add_argument("--redact", action="store_true", help="leave out error messages too")
    parser.add_argument("--machine", help="the machine column (default: this host's name)")
    parser.add_argument("--user", help="the user column (default: your user name)")


async def export(params: dict[str, Any]) -> dict[str, Any]:
    """The `openvaala/exportUsage` result (wire JSON), from the runtime host or done here."""
    try:
        request = structure(params, api.ExportUsageParams)
        run = run_dir()
        ensure_private(run)
        route = await asyncio.to_thread(reach_or_hold, run, front_hello())
    except ParamsError as exc:
        raise ExportFailed(f"export failed: {'; '.join(exc.problems)}") from None
    except (FrontError, UnsafeRunDir, OSError) as exc:
        raise ExportFailed(f"cannot reach the openvaala runtime host: {exc}") from None
    if isinstance(route, HostLink):
        return await _via_host(route, params)
    with route:
        return await _on_file(request)


def main(args: argparse.Namespace) -> int:
    directory = args.parquet.expanduser().resolve()
    params = {
        "directory": str(directory),
        "redact": args.redact,
        "machine": args.machine or socket.gethostname(),
        "user": args.user or getpass.getuser(),
    }
    try:
        result = asyncio.run(export(params))
    except ExportFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    written = ", ".join(f"{t['rows']:,} {t['name']} ({t['files']} files)" for t in result["tables"])
    who = f"{result['user']}@{result['machine']}" + (", redacted" if result["redacted"] else "")
    print(f"export {result['number']} to {result['directory']} as {who}: {written}")
    return 0


async def _via_host(link: HostLink, params: dict[str, Any]) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await sql_cli.host_request(link, CLIENT_NAME, "openvaala/exportUsage", params)
        return result
    except PeerError as exc:
        raise ExportFailed(f"export failed: {'; '.join(exc.problems) or exc}") from None
    except ConnectionError:
        raise ExportFailed("the openvaala runtime host went away during the export") from None


async def _on_file(request: api.ExportUsageParams) -> dict[str, Any]:
    """Only while no host can start: see the module docstring."""
    from openvaala_lsp.runtime.usage_export import export_usage
    from openvaala_lsp.storage.duckdb_store import DuckDBStorage
    from openvaala_lsp.storage.errors import StorageLockedError

    path = paths.database_path()
    if not path.exists():
        raise ExportFailed(f"no history yet at {path}")
    try:
        storage = await DuckDBStorage.open(str(path))
    except StorageLockedError as exc:
        raise ExportFailed(f"the history database is in use ({exc}); try again in a moment") from None
    try:
        result = await export_usage(storage, request)
    except OSError as exc:
        raise ExportFailed(f"export failed: cannot write to {request.directory}: {exc.strerror or exc}") from None
    finally:
        await storage.close()
    answer: dict[str, Any] = unstructure(result)
    return answer
