"""`exportUsage` on a store: the request from the wire's params (this machine and user unless they
say), the result from what the store wrote. The runtime runs it (for `openvaala export` too, which
asks the host) and says in its own words what an OSError (the directory) or a closed store means."""

from __future__ import annotations

import getpass
import socket

from openvaala_lsp.protocol import api
from openvaala_lsp.storage.interfaces import ExportRequest, Storage


async def export_usage(storage: Storage, params: api.ExportUsageParams) -> api.ExportUsageResult:
    request = ExportRequest(
        directory=params.directory,
        machine=params.machine or socket.gethostname(),
        user=params.user or getpass.getuser(),
        redact=params.redact,
    )
    outcome = await storage.export_usage(request)
    return api.ExportUsageResult(
        directory=request.directory,
        number=outcome.number,
        machine=request.machine,
        user=request.user,
        redacted=request.redact,
        tables=[api.ExportedTable(name=t.name, rows=t.rows, files=t.files) for t in outcome.tables],
    )
