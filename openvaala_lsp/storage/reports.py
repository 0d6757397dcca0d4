"""The standard usage reports of `openvaala usage`, as data: each one is a grouping of `model_calls_v`
(schemas/README.md, "Usage analytics") beside the same grouping of `file_changes_v` (the lines the
agent's tools changed), so a report's figures are what a user's own SQL on those views gives.
`report_sql` makes one read-only statement with positional parameters for `openvaala/query`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs

TOKENS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")
MEASURES = (
    "calls",
    *TOKENS,
    "total_tokens",
    "cost",
    "currency",
    "unpriced_calls",
    "estimated_calls",
    "failed_calls",
)
_MEASURES_SQL = f"""count(*) AS calls,
  {", ".join(f"sum({c})::BIGINT AS {c}" for c in (*TOKENS, "total_tokens"))},
  CASE WHEN min(currency) = max(currency) THEN sum(cost) END AS cost,
  CASE WHEN min(currency) = max(currency) THEN min(currency) END AS currency,
  count(*) - count(currency) AS unpriced_calls,
  count_if(usage_estimated) AS estimated_calls,
  count(error) AS failed_calls"""  # cheap forms: a price comes with a currency, a failure with an error
LINES = ("lines_added", "lines_deleted", "files_changed")
_LINES_SQL = """sum(additions)::BIGINT AS lines_added,
  sum(deletions)::BIGINT AS lines_deleted,
  count(DISTINCT path) AS files_changed"""


@attrs.frozen
class Report:
    name: str
    about: str
    keys: tuple[str, ...]  # SELECT expressions of the grouping, each with its column name
    order: str
    limit: int | None = None  # rows shown unless the user asks for another number
    extra: tuple[str, ...] = ()  # further columns, aggregates of the group

    @property
    def key_names(self) -> list[str]:
        return [key.rpartition(" AS ")[2] if " AS " in key else key for key in self.keys]


REPORTS: dict[str, Report] = {
    report.name: report
    for report in (
        Report("day", "per UTC day", ("day",), "day"),
        Report("model", "per provider and model", ("provider", "model"), "total_tokens DESC, provider, model"),
        Report("project", "per workspace folder", ("workspace AS project",), "total_tokens DESC, project"),
        Report(
            "conversation",
            "per conversation, the largest first",
            ("conversation_id",),
            "total_tokens DESC, conversation_id",
            limit=20,
            extra=("min(started_at) AS first_call", "max(started_at) AS last_call"),
        ),
        Report("agent", "per agent (sub-agents under their own names)", ("agent",), "total_tokens DESC, agent"),
    )
}


@attrs.frozen
class Filters:
    since: dt.datetime | None = None  # calls started at or after
    until: dt.datetime | None = None  # calls started before
    project: str | None = None  # a workspace folder: calls in it or in a folder below it


def where(filters: Filters, time: str = "started_at") -> tuple[str, list[Any]]:
    """The WHERE clause (empty when unfiltered) and its parameters, over `model_calls_v` (or another
    view with a workspace, whose time column is `time`)."""
    clauses: list[str] = []
    parameters: list[Any] = []
    if filters.since is not None:
        clauses.append(f"{time} >= ?::TIMESTAMPTZ")
        parameters.append(_rfc3339(filters.since))
    if filters.until is not None:
        clauses.append(f"{time} < ?::TIMESTAMPTZ")
        parameters.append(_rfc3339(filters.until))
    if filters.project is not None:
        root = filters.project.rstrip("/") or "/"
        clauses.append("(workspace = ? OR starts_with(workspace, ?))")
        parameters += [root, root if root.endswith("/") else root + "/"]
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), parameters


def report_sql(report: Report, filters: Filters, limit: int | None = None) -> tuple[str, list[Any]]:
    """One statement: the report's rows, ordered, at most `limit` (else the report's own) rows."""
    condition, parameters = where(filters)
    changed, changed_parameters = where(filters, "changed_at")
    columns = ", ".join((*report.keys, *report.extra))
    # the lines changed in the same groups and window; a group without calls there is left out
    same = " AND ".join(f"l.{name} IS NOT DISTINCT FROM r.{name}" for name in report.key_names)
    lines = ", ".join(f"coalesce(l.{column}, 0) AS {column}" for column in LINES)
    sql = (
        f"WITH r AS (SELECT {columns},\n  {_MEASURES_SQL}\nFROM model_calls_v{condition}\nGROUP BY ALL),\n"
        f"l AS (SELECT {', '.join(report.keys)},\n  {_LINES_SQL}\nFROM file_changes_v{changed}\nGROUP BY ALL)\n"
        f"SELECT r.*, {lines}\nFROM r LEFT JOIN l ON {same}"
    )
    parameters += changed_parameters
    if report.name == "conversation":  # the title is the conversation's, never a call's
        sql = (
            f"WITH j AS ({sql})\nSELECT j.conversation_id, c.title, j.* EXCLUDE (conversation_id)\n"
            "FROM j LEFT JOIN conversations c ON c.id = j.conversation_id"
        )
    sql += f"\nORDER BY {report.order}"
    rows = limit if limit is not None else report.limit
    if rows is not None:
        sql += f"\nLIMIT {int(rows)}"
    return sql, parameters


def _rfc3339(value: dt.datetime) -> str:
    aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return aware.astimezone(dt.UTC).isoformat()
