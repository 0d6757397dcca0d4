"""Usage export (an openvaala extension: schemas/README.md, "Usage analytics")."""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.model import (
    check_path,
)
from openvaala_lsp.protocol.errors import FieldError


def _absolute(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    check_path(instance, attribute, value)
    if not value.startswith("/"):
        raise FieldError(attribute.name, f"expected an absolute path, got {value[:200]!r}")


def _name(instance: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not 1 <= len(value) <= 200:
        raise FieldError(attribute.name, "must be 1 to 200 characters")


@attrs.define(kw_only=True)
class ExportUsageParams:
    """Writes the analytic views' rows that are new since the last export to `directory` as Parquet,
    partitioned by day; `machine` and `user` (default: the runtime's host name and user) label every
    row; `redact` leaves out error messages too (no export holds prompts, answers or tool output)."""

    directory: str = attrs.field(validator=_absolute)
    redact: bool = False
    machine: str | None = attrs.field(default=None, validator=_name)
    user: str | None = attrs.field(default=None, validator=_name)


@attrs.define(kw_only=True)
class ExportedTable:
    name: str  # model_calls, turns or compactions: the folder under `directory`
    rows: int
    files: int


@attrs.define(kw_only=True)
class ExportUsageResult:
    """`number` counts this database's exports to `directory` (1 for the first)."""

    directory: str
    number: int
    machine: str
    user: str
    redacted: bool
    tables: list[ExportedTable]
