"""When telemetry is on, and where it goes: the user config's `[telemetry]` table, else the standard
OpenTelemetry variables of the runtime's environment.

```toml
[telemetry]
enabled = true                     # default: on when an OTEL_EXPORTER_OTLP_*ENDPOINT variable is set
endpoint = "http://localhost:4318" # OTLP/HTTP; /v1/traces and /v1/metrics are added
headers = { "x-team" = "tools" }   # secrets belong in OTEL_EXPORTER_OTLP_HEADERS, not here
serviceName = "openvaala"          # default: OTEL_SERVICE_NAME, else "openvaala"
captureContent = false             # prompts, answers, tool arguments and results in the spans
```

Only the user's file may hold it: a project's file must not decide where the user's traces go."""

from __future__ import annotations

import importlib.util
import logging
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
# the variable OpenTelemetry's GenAI instrumentations read for the same opt-in
CAPTURE_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
KEYS: dict[str, type] = {
    "enabled": bool,
    "endpoint": str,
    "headers": dict,
    "serviceName": str,
    "captureContent": bool,
}


@attrs.frozen(kw_only=True)
class TelemetrySettings:
    enabled: bool = False
    endpoint: str | None = None  # None: the exporters read the OTEL_EXPORTER_OTLP_* variables
    headers: dict[str, str] = attrs.Factory(dict)
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else "openvaala"
    capture_content: bool = False
    traces: bool = True  # OTEL_TRACES_EXPORTER=none turns one signal off
    metrics: bool = True


def check_table(table: object) -> list[tuple[str, str]]:
    """Problems of a `[telemetry]` table, as (wire path, message), like the rest of the config's."""
    if not isinstance(table, dict):
        return [("$.telemetry", f"expected table, got {type(table).__name__}")]
    problems = []
    for key, value in table.items():
        expected = KEYS.get(key)
        if expected is None:
            problems.append((f"$.telemetry.{key}", f"unknown field; expected one of {', '.join(sorted(KEYS))}"))
        elif not isinstance(value, expected):
            problems.append((f"$.telemetry.{key}", f"expected {_type_name(expected)}, got {type(value).__name__}"))
        elif isinstance(value, dict) and not all(isinstance(v, str) for v in value.values()):
            problems.append(("$.telemetry.headers", "expected a table of strings"))
    return problems


def _type_name(expected: type) -> str:
    return {bool: "boolean", str: "string", dict: "table"}.get(expected, expected.__name__)


def settings_from(table: Mapping[str, Any], environ: Mapping[str, str]) -> TelemetrySettings:
    """The settings of a checked `[telemetry]` table (empty when there is none) and the environment."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TelemetrySettings()
    from_environment = any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)
    enabled = table.get("enabled", from_environment or "endpoint" in table)
    capture = table.get("captureContent", environ.get(CAPTURE_CONTENT_VARIABLE, "").strip().lower() == "true")
    return TelemetrySettings(
        enabled=bool(enabled),
        endpoint=table.get("endpoint"),
        headers=dict(table.get("headers", {})),
        service_name=table.get("serviceName"),
        capture_content=bool(capture),
        traces=environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none",
        metrics=environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none",
    )


def read_settings(config_file: Path, environ: Mapping[str, str]) -> TelemetrySettings:
    """The settings of the user's config file and the environment. A file that cannot be read or a
    table with problems is left out (the config loader reports it, with its line), the variables
    still count."""
    try:
        table = tomllib.loads(config_file.read_text(encoding="utf-8")).get("telemetry", {})
    except FileNotFoundError:
        table = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        logger.warning("telemetry: %s not read (%s): only the OTEL_* variables count", config_file, exc)
        table = {}
    if check_table(table):
        logger.warning(
            "telemetry: the [telemetry] table of %s has errors: only the OTEL_* variables count", config_file
        )
        table = {}
    return settings_from(table, environ)


def describe(settings: TelemetrySettings, environ: Mapping[str, str]) -> str:
    """One line for `openvaala doctor`: off, or what goes where."""
    if not settings.enabled or not (settings.traces or settings.metrics):
        return "off (set [telemetry] in the user config, or OTEL_EXPORTER_OTLP_ENDPOINT, to export)"
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return "WARNING: on, but OpenTelemetry is not installed (the telemetry extra): nothing is exported"
    signals = " and ".join(name for name, on in (("traces", settings.traces), ("metrics", settings.metrics)) if on)
    where = settings.endpoint or next(
        (environ[name] for name in ENDPOINT_VARIABLES if environ.get(name, "").strip()), "http://localhost:4318"
    )
    content = "with" if settings.capture_content else "without"
    return f"on: {signals} over OTLP/HTTP to {where}, {content} prompts and tool content"
