"""SQL on the history (`openvaala/query`)."""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.protocol.api.common import (
    _check_query_limit,
    _check_query_timeout,
)


@attrs.define(kw_only=True)
class QueryParams:
    """One read-only statement (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN) on the
    history database; `parameters` fill its `?` / `$1` placeholders in order. A query still running
    after `timeoutMs` is stopped."""

    sql: str
    parameters: list[Any] | None = None
    limit: int | None = attrs.field(default=None, validator=_check_query_limit)
    timeout_ms: int | None = attrs.field(default=None, validator=_check_query_timeout)


@attrs.define(kw_only=True)
class QueryColumn:
    name: str
    type: str  # DuckDB's name of the type: "BIGINT", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]", ...


@attrs.define(kw_only=True)
class QueryResult:
    """`rows` hold JSON values in column order; `truncated`: the answer is not all of it (more rows
    existed than were returned, or a long value was cut, ending in `…[cut: ...]`)."""

    columns: list[QueryColumn]
    rows: list[list[Any]] = attrs.field(metadata={"json": True})  # JSON values already: sent as they are
    truncated: bool
