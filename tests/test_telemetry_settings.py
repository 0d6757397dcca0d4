"""When telemetry is on: the user config's [telemetry] table (checked like the rest of the file,
refused in a project's file), the standard OTEL_* variables; and off, nothing of OpenTelemetry is
loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openvaala_lsp.config import load_definitions
from openvaala_lsp.setup import doctor
from openvaala_lsp.telemetry.base import NOTHING
from openvaala_lsp.telemetry.settings import TelemetrySettings, read_settings, settings_from
from openvaala_lsp.telemetry.start import telemetry_for

TABLE = '[telemetry]\nendpoint = "http://collector:4318"\ncaptureContent = true\nheaders = { "x-team" = "tools" }\n'


def test_the_variables_turn_it_on_and_the_table_overrides_them() -> None:
    assert settings_from({}, {}) == TelemetrySettings()
    assert settings_from({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).enabled
    assert settings_from({}, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}).enabled
    assert not settings_from({"enabled": False}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).enabled
    assert not settings_from({"endpoint": "http://c:4318"}, {"OTEL_SDK_DISABLED": "true"}).enabled
    on = settings_from({"endpoint": "http://c:4318"}, {"OTEL_METRICS_EXPORTER": "none"})
    assert on.enabled and on.traces and not on.metrics
    opted = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert settings_from({}, opted).capture_content
    assert not settings_from({"captureContent": False}, opted).capture_content


def test_the_user_file_may_hold_it_a_project_file_may_not(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    (project / ".openvaala").mkdir(parents=True)
    user.mkdir()
    (user / "config.toml").write_text(TABLE)
    (project / ".openvaala" / "config.toml").write_text('[telemetry]\nendpoint = "http://evil:4318"\n')
    loaded = load_definitions([project], config_dir=user)
    assert [(e.path, e.field, e.message) for e in loaded.errors] == [
        (project / ".openvaala" / "config.toml", "$.telemetry", "only the user config may set telemetry")
    ]
    settings = read_settings(user / "config.toml", {})
    assert settings == TelemetrySettings(
        enabled=True, endpoint="http://collector:4318", headers={"x-team": "tools"}, capture_content=True
    )


def test_a_bad_table_is_an_error_with_its_line_and_leaves_only_the_variables(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[telemetry]\nendpoint = "http://c:4318"\nendpont = 1\nenabled = "yes"\n')
    errors = load_definitions([], config_dir=tmp_path).errors
    assert [(e.line, e.field) for e in errors] == [(3, "$.telemetry.endpont"), (4, "$.telemetry.enabled")]
    assert "expected boolean, got str" in errors[1].message
    assert read_settings(tmp_path / "config.toml", {}) == TelemetrySettings()
    assert read_settings(tmp_path / "config.toml", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}).enabled


def test_off_is_the_no_op_and_loads_nothing_of_opentelemetry(tmp_path: Path) -> None:
    assert telemetry_for(TelemetrySettings()) is NOTHING
    assert telemetry_for(TelemetrySettings(enabled=True, traces=False, metrics=False)) is NOTHING
    # a fresh process: the runtime, its start-up and the settings read, with telemetry off
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import openvaala_lsp.runtime.core, openvaala_lsp.runtime.startup\n"
        "from openvaala_lsp.telemetry.start import user_telemetry\n"
        f"assert user_telemetry(Path({str(tmp_path / 'config.toml')!r}), {{}}) is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout.strip()) == (0, "[]"), ran.stderr


def test_doctor_says_whether_and_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVAALA_HOME", str(tmp_path))
    assert doctor.telemetry_status({}).startswith("off (set [telemetry] in the user config")
    collector = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    line = "on: traces and metrics over OTLP/HTTP to http://collector:4318, without prompts and tool content"
    assert doctor.telemetry_status(collector) == line
    (tmp_path / "config.toml").write_text(TABLE)
    assert doctor.telemetry_status({"OTEL_METRICS_EXPORTER": "none"}) == (
        "on: traces over OTLP/HTTP to http://collector:4318, with prompts and tool content"
    )


def test_a_grpc_protocol_is_named_as_not_followed(caplog: pytest.LogCaptureFixture) -> None:
    settings = TelemetrySettings(enabled=True, endpoint="http://127.0.0.1:9", traces=False)
    telemetry = telemetry_for(settings, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert telemetry is not NOTHING
    telemetry.close()
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: openvaala sends OTLP/HTTP (http/protobuf) only" in caplog.text
