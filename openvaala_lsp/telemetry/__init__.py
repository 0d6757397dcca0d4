"""What the runtime reports of its work to an OpenTelemetry collector, when the user asks for it.

`base` is the interface the runtime calls at its boundaries (a turn, a model call, a tool call, a
hook, a compaction) and the no-op it gets by default; `settings` reads the user config's
`[telemetry]` table and the standard `OTEL_*` variables; `start.telemetry_for` builds the
OpenTelemetry implementation (`otel`), the only module that imports OpenTelemetry, and only when
telemetry is on."""
