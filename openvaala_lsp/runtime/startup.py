"""A runtime over the user's history database, started beside an editor's first messages: for the
runtime host (`host/server.py`) and for the standalone mode (`server/stdio.py`) alike."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from openvaala_lsp import paths
from openvaala_lsp.protocol.errors import RuntimeStopped
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.storage.duckdb_store import DuckDBStorage, StorageLockedError
from openvaala_lsp.telemetry.start import user_telemetry

logger = logging.getLogger(__name__)

EPHEMERAL_IDLE_ENV = "OPENVAALA_EPHEMERAL_IDLE_SECONDS"


def options_from_environment() -> dict[str, Any]:
    """Runtime options the process's environment sets."""
    options: dict[str, Any] = {}
    if seconds := os.environ.get(EPHEMERAL_IDLE_ENV):
        try:
            options["unsaved_idle_timeout"] = max(float(seconds), 0.0)
        except ValueError:
            logger.warning("ignoring %s=%r: not a number of seconds", EPHEMERAL_IDLE_ENV, seconds)
    return options


async def start_runtime(future: asyncio.Future[Runtime], **options: Any) -> None:
    """Resolves `future` with the runtime or with a RuntimeStopped saying why it could not start;
    `options` are RuntimeOptions' fields, beside those of the environment."""
    try:
        path = paths.database_path()
        paths.ensure_private_dir(path.parent)  # the history is the user's alone
        storage = await DuckDBStorage.open(str(path))
        # the user's [telemetry] and OTEL_* variables, read once: a change needs a new runtime host
        options.setdefault("telemetry", user_telemetry(paths.config_dir() / "config.toml"))
        # definitions from the configuration files
        future.set_result(await Runtime.start(storage, **options_from_environment(), **options))
    except StorageLockedError as exc:
        logger.error("%s", exc)
        future.set_exception(RuntimeStopped(str(exc)))
    except Exception as exc:
        logger.exception("the runtime could not start")
        future.set_exception(RuntimeStopped(f"the runtime could not start: {exc}"))
