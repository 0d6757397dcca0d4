"""The runtime's telemetry: nothing, unless the settings turn it on and OpenTelemetry is installed
(the `telemetry` extra). OpenTelemetry is imported here, and only then."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from openvaala_lsp.telemetry.base import NOTHING, Telemetry
from openvaala_lsp.telemetry.settings import TelemetrySettings, read_settings

logger = logging.getLogger(__name__)


def telemetry_for(settings: TelemetrySettings, environ: Mapping[str, str] | None = None) -> Telemetry:
    if not settings.enabled or not (settings.traces or settings.metrics):
        return NOTHING
    try:
        from openvaala_lsp.telemetry.otel import OtelTelemetry
    except ImportError as exc:
        logger.warning(
            "telemetry is on but OpenTelemetry is not installed (%s): install openvaala with the `telemetry` "
            "extra; nothing is exported",
            exc,
        )
        return NOTHING
    try:
        return OtelTelemetry(settings, environ)
    except Exception:  # a bad endpoint or header: the runtime runs without telemetry
        logger.exception("telemetry could not start; nothing is exported")
        return NOTHING


def user_telemetry(config_file: Path, environ: Mapping[str, str] | None = None) -> Telemetry:
    """The telemetry the user's config file and the environment ask for."""
    environ = os.environ if environ is None else environ
    return telemetry_for(read_settings(config_file, environ), environ)
