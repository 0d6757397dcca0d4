"""Telemetry through OpenTelemetry's SDK, exported over OTLP/HTTP. Imported only when telemetry is on
(`start.telemetry_for`): the one module of openvaala that loads OpenTelemetry.

Spans follow the GenAI semantic conventions: a turn is `invoke_agent {agent}`, a model call
`chat {model}`, a tool call `execute_tool {tool}`; hooks and compactions are spans of their own.
Parents are passed explicitly, never through a context variable: turns run side by side on one
event loop. Spans and metrics leave in the SDK's background threads, so a collector that is slow or
down costs a turn nothing: the SDK logs the failure and drops what it could not send. Whatever goes
wrong in here is logged and swallowed (`_guarded`): telemetry never fails a turn."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any, ParamSpec, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.re import parse_env_headers

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import CompactionTrigger, Item, ModelCall, ToolCall, Turn, TurnStatus
from openvaala_lsp.providers.base import ModelRequest
from openvaala_lsp.telemetry import genai_content
from openvaala_lsp.telemetry.base import NOTHING, ToolCallSpan
from openvaala_lsp.telemetry.settings import TelemetrySettings

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
TOKEN_KINDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")
SECONDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300]  # model and tool durations
CLOSE_SECONDS = 5.0  # the longest a stop waits for the last spans and metrics to leave
_failures = 0


def _guarded(fallback: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A telemetry call that fails is logged (the first with its traceback) and returns `fallback`."""

    def wrap(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            global _failures
            try:
                return method(*args, **kwargs)
            except Exception:
                _failures += 1
                logger.warning("telemetry: %s failed; the turn goes on", method.__qualname__, exc_info=_failures == 1)
                return fallback  # type: ignore[no-any-return]

        return guarded

    return wrap


class Instruments:
    """The metrics, from one meter."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter("openvaala", _version())
        self.tokens = meter.create_counter("openvaala.tokens", "{token}", "tokens by model and kind")
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", "{token}", "tokens per model call, input and output"
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", "s", "model call latency", explicit_bucket_boundaries_advisory=SECONDS
        )
        self.first_token = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            "time to the model's first streamed event",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.tool_duration = meter.create_histogram(
            "openvaala.tool.duration", "s", "tool call duration", explicit_bucket_boundaries_advisory=SECONDS
        )
        self.active_turns = meter.create_up_down_counter("openvaala.turns.active", "{turn}", "turns running now")


class OtelTelemetry:
    def __init__(self, settings: TelemetrySettings, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.capture_content = settings.capture_content
        for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
            if environ.get(name, "http/protobuf").strip() != "http/protobuf":
                logger.warning("telemetry: %s=%s: openvaala sends OTLP/HTTP (http/protobuf) only", name, environ[name])
        resource = Resource.create(_resource_attributes(settings, environ))
        headers = _headers(settings, environ)
        self._tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)  # `close` does
        if settings.traces:
            exporter = OTLPSpanExporter(endpoint=_endpoint(settings, "traces"), headers=headers)
            self._tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        readers: list[MetricReader] = []
        if settings.metrics:
            metrics = OTLPMetricExporter(endpoint=_endpoint(settings, "metrics"), headers=headers)
            readers.append(PeriodicExportingMetricReader(metrics))
        self._meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        self.tracer = self._tracer_provider.get_tracer("openvaala", _version())
        self.instruments = Instruments(self._meter_provider)

    @_guarded(NOTHING)
    def turn(self, turn: Turn, agent: str, within: ToolCallSpan | None = None) -> _TurnSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": turn.conversation_id,
            "openvaala.session.id": turn.session_id,
            "openvaala.turn.id": turn.id,
        }
        if turn.model is not None:
            attributes |= {"gen_ai.provider.name": turn.model.provider, "gen_ai.request.model": turn.model.name}
        # a root unless a tool call started it: never whatever span a library made current
        parent = trace.set_span_in_context(within.span) if isinstance(within, _ToolCallSpan) else Context()
        name = f"invoke_agent {agent}"
        span = self.tracer.start_span(name, context=parent, kind=SpanKind.INTERNAL, attributes=attributes)
        self.instruments.active_turns.add(1)
        return _TurnSpan(self, span)

    def close(self) -> None:
        # a daemon thread: a collector that does not answer holds up the runtime's stop for
        # CLOSE_SECONDS at most, and never its process's exit
        closing = threading.Thread(target=self._shutdown, name="telemetry shutdown", daemon=True)
        closing.start()
        closing.join(CLOSE_SECONDS)
        if closing.is_alive():
            logger.warning("telemetry: the collector took over %g s; what was left is dropped", CLOSE_SECONDS)

    def _shutdown(self) -> None:
        for provider in (self._tracer_provider, self._meter_provider):
            try:
                provider.shutdown()  # sends what is left
            except Exception:
                logger.warning("telemetry: shutting down %s failed", type(provider).__name__, exc_info=True)


class _Spans:
    """A span that holds calls: a turn or a compaction."""

    def __init__(self, telemetry: OtelTelemetry, span: trace.Span) -> None:
        self._telemetry = telemetry
        self._span = span

    def _child(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> trace.Span:
        context = trace.set_span_in_context(self._span)
        return self._telemetry.tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    @_guarded(NOTHING)
    def model_call(self, model: ModelDefinition, request: ModelRequest) -> _ModelCallSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.ref.provider,
            "gen_ai.request.model": model.ref.name,
            "openvaala.model.api": model.api,
        }
        if request.max_output_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_output_tokens
        if self._telemetry.capture_content:
            attributes["gen_ai.input.messages"] = genai_content.input_messages(request.messages)
            attributes["gen_ai.system_instructions"] = genai_content.system_instructions(request.instructions)
        return _ModelCallSpan(self._telemetry, self._child(f"chat {model.ref.name}", SpanKind.CLIENT, attributes))

    @_guarded(NOTHING)
    def tool_call(self, call: ToolCall) -> _ToolCallSpan:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        if self._telemetry.capture_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        span = self._child(f"execute_tool {call.name}", SpanKind.INTERNAL, attributes)
        return _ToolCallSpan(self._telemetry, span, call.name)

    @_guarded(NOTHING)
    def hook(self, event: str) -> _EndedSpan:
        return _EndedSpan(self._child(f"hook {event}", SpanKind.INTERNAL, {"openvaala.hook.event": event}))

    @_guarded(NOTHING)
    def compaction(self, trigger: CompactionTrigger) -> _CompactionSpan:
        span = self._child("compaction", SpanKind.INTERNAL, {"openvaala.compaction.trigger": trigger.value})
        return _CompactionSpan(self._telemetry, span)


class _TurnSpan(_Spans):
    @_guarded(None)
    def finish(self, turn: Turn) -> None:
        self._telemetry.instruments.active_turns.add(-1)
        span = self._span
        span.set_attributes(
            {
                "openvaala.turn.status": turn.status.value,
                "openvaala.turn.reason": turn.reason.value if turn.reason is not None else "",
                "gen_ai.usage.input_tokens": turn.usage.input_tokens,
                "gen_ai.usage.output_tokens": turn.usage.output_tokens,
            }
        )
        if turn.status is TurnStatus.FAILED:
            kind = turn.error.kind if turn.error is not None else "failed"
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, turn.error.message if turn.error is not None else None))
        span.end()


class _CompactionSpan(_Spans):
    @_guarded(None)
    def end(self, error: str | None = None) -> None:
        _end(self._span, error)


class _EndedSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    @_guarded(None)
    def end(self, error: str | None = None) -> None:
        _end(self._span, error)


def _end(span: trace.Span, error: str | None) -> None:
    if error is not None:
        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR, error))
    span.end()


class _ModelCallSpan:
    def __init__(self, telemetry: OtelTelemetry, span: trace.Span) -> None:
        self._telemetry = telemetry
        self._span = span

    @_guarded(None)
    def finish(self, record: ModelCall, finish_reason: str | None, output: Sequence[Item]) -> None:
        span, usage = self._span, record.usage
        span.set_attributes(
            {
                "gen_ai.response.model": record.model,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "openvaala.model_call.id": record.id,
                "openvaala.model_call.purpose": record.purpose.value,
                "openvaala.usage.estimated": record.usage_estimated,
            }
        )
        if finish_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        if self._telemetry.capture_content:
            span.set_attribute("gen_ai.output.messages", genai_content.output_messages(output, finish_reason))
        if record.error is not None:
            span.set_attribute("error.type", "interrupted" if record.error == "interrupted" else "model_error")
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end()
        self._measure(record)

    def _measure(self, record: ModelCall) -> None:
        instruments = self._telemetry.instruments
        base = {
            "gen_ai.provider.name": record.provider,
            "gen_ai.request.model": record.model,
            "gen_ai.operation.name": "chat",
        }
        for kind in TOKEN_KINDS:
            count = getattr(record.usage, kind)
            if count:
                instruments.tokens.add(count, base | {"openvaala.token.kind": kind.removesuffix("_tokens")})
        instruments.token_usage.record(record.usage.input_tokens, base | {"gen_ai.token.type": "input"})
        instruments.token_usage.record(record.usage.output_tokens, base | {"gen_ai.token.type": "output"})
        failed = {"error.type": "model_error"} if record.error is not None else {}
        instruments.duration.record(record.latency_ms / 1000, base | failed)
        if record.first_token_ms is not None:
            instruments.first_token.record(record.first_token_ms / 1000, base)


class _ToolCallSpan:
    def __init__(self, telemetry: OtelTelemetry, span: trace.Span, name: str) -> None:
        self._telemetry = telemetry
        self.span = span  # a sub-agent's turn started by the call is its child
        self._name = name
        self._started = time.monotonic()
        self._ended = False

    @_guarded(None)
    def finish(self, text: str, *, is_error: bool) -> None:
        if self._ended:  # a call interrupted while its result is saved
            return
        self._ended = True
        span = self.span
        if self._telemetry.capture_content:
            span.set_attribute("gen_ai.tool.call.result", text)
        attributes = {"gen_ai.tool.name": self._name}
        if is_error:
            attributes["error.type"] = "tool_error"
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        span.end()
        self._telemetry.instruments.tool_duration.record(time.monotonic() - self._started, attributes)


def _version() -> str:
    try:
        return metadata.version("openvaala-lsp")
    except metadata.PackageNotFoundError:
        return "unknown"


def _resource_attributes(settings: TelemetrySettings, environ: Mapping[str, str]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"service.version": _version()}
    # Resource.create reads OTEL_SERVICE_NAME itself; a name passed here would hide it
    if settings.service_name is not None:
        attributes["service.name"] = settings.service_name
    elif not environ.get("OTEL_SERVICE_NAME", "").strip():
        attributes["service.name"] = "openvaala"
    return attributes


def _endpoint(settings: TelemetrySettings, signal: str) -> str | None:
    """The config's base URL with the signal's path; None: the exporter reads the variables."""
    return f"{settings.endpoint.rstrip('/')}/v1/{signal}" if settings.endpoint else None


def _headers(settings: TelemetrySettings, environ: Mapping[str, str]) -> dict[str, str] | None:
    """None: the exporters read OTEL_EXPORTER_OTLP_*HEADERS; the config's headers go over those."""
    if not settings.headers:
        return None
    headers: dict[str, str] = dict(parse_env_headers(environ.get("OTEL_EXPORTER_OTLP_HEADERS", ""), liberal=True))
    return headers | settings.headers
