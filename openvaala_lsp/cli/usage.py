"""`openvaala usage [day|model|project|conversation|agent]`: where the tokens and the money went, and
the lines of files the agent changed meanwhile.

Each report is one read-only query of `model_calls_v` (`storage/reports.py`), run like `openvaala sql`:
through the runtime host's `openvaala/query` (on a cursor and thread of its own, so a running turn
never waits), starting the host when none runs. Output: a table with a bar per row, CSV or
JSON; `--plot FILE.png|.svg` draws the report with matplotlib (the `plot` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import re
import sys
from pathlib import Path
from typing import Any

from openvaala_lsp.cli import sql as sql_cli
from openvaala_lsp.cli.args import BadArgument, plural, user_path, whole_number
from openvaala_lsp.protocol import api
from openvaala_lsp.storage.reports import REPORTS, Filters, Report, report_sql

DESCRIPTION = """\
Where the tokens and the money went, and how many lines of files the agents changed meanwhile: per
UTC day (the default), model, project (workspace folder), conversation or agent. A table with a bar
per row, or CSV or JSON for scripts; --plot draws a chart too (PNG or SVG).

Costs come from the prices you give your models; a call without one counts as unpriced, never as a
guess. Reading the history never holds up a turn that is running."""
METRICS = ("tokens", "cost", "calls")
BAR_WIDTH = 24
EIGHTHS = " ▏▎▍▌▋▊▉█"
PLOT_FORMATS = (".png", ".svg")
_RELATIVE = re.compile(r"^(\d+)([hdw])$")
_UNITS = {"h": dt.timedelta(hours=1), "d": dt.timedelta(days=1), "w": dt.timedelta(weeks=1)}
# what the table shows of a report's measures, and under which heading
SHOWN = (
    ("calls", "calls"),
    ("input_tokens", "input"),
    ("cached_input_tokens", "cached"),
    ("output_tokens", "output"),
    ("reasoning_tokens", "reasoning"),
    ("total_tokens", "total"),
    ("lines_added", "+lines"),  # what the agent's tools changed in files, beside what it cost
    ("lines_deleted", "-lines"),
)


class UsageError(Exception):
    """The message is for the user."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "report",
        nargs="?",
        default="day",
        choices=list(REPORTS),
        help="day (default), model, project, conversation or agent",
    )
    parser.add_argument(
        "--since", type=_since, help="from this UTC day or time on: 2025-03-01, 2025-03-01T12:00Z, 7d, 12h, 2w"
    )
    parser.add_argument("--until", type=_until, help="up to this UTC day (inclusive) or before this time")
    parser.add_argument("--project", type=user_path, help="only calls in this workspace folder (or below it)")
    parser.add_argument("--format", choices=sql_cli.FORMATS, default="table", help="table (default), csv or json")
    parser.add_argument(
        "--limit",
        type=whole_number(1, api.MAX_QUERY_LIMIT),
        help="rows to show (the conversation report shows 20 by default)",
    )
    parser.add_argument("--timeout", type=sql_cli.query_timeout, metavar="SECONDS", help=sql_cli.TIMEOUT_HELP)
    parser.add_argument("--bar", choices=METRICS, default="tokens", help="what the bars measure (default tokens)")
    parser.add_argument("--plot", type=_plot_file, metavar="FILE", help="also draw the report into FILE.png or .svg")


def parse_when(text: str, *, end: bool, now: dt.datetime | None = None) -> dt.datetime:
    """A UTC day (`end`: the next day's start, so the day is included), an RFC 3339 time (UTC when
    it names no offset), or an age: `12h`, `7d`, `2w` ago."""
    now = now or dt.datetime.now(dt.UTC)
    relative = _RELATIVE.match(text.strip())
    if relative:
        return now - int(relative.group(1)) * _UNITS[relative.group(2)]
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        pass
    else:
        start = dt.datetime.combine(day, dt.time(), dt.UTC)
        return start + dt.timedelta(days=1) if end else start
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(f"not a day, a time or an age (7d, 12h, 2w): {text!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _since(text: str) -> dt.datetime:
    try:
        return parse_when(text, end=False)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _until(text: str) -> dt.datetime:
    try:
        return parse_when(text, end=True)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _plot_file(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"makes a .png or an .svg file, not {path.name!r}")
    return path


def filters_from(args: argparse.Namespace) -> Filters:
    """The report's filters; BadArgument when they contradict each other."""
    since, until = args.since, args.until
    if since is not None and until is not None and until <= since:
        raise BadArgument("--until is not after --since")
    project = str(args.project.resolve()) if args.project else None
    return Filters(since=since, until=until, project=project)


def main(args: argparse.Namespace) -> int:
    """Raises BadArgument for options that contradict each other."""
    report = REPORTS[args.report]
    filters = filters_from(args)
    try:
        sql, parameters = report_sql(report, filters, args.limit)
        link = sql_cli.reach_host()
        limit, timeout_ms = api.MAX_QUERY_LIMIT, args.timeout
        result = asyncio.run(sql_cli.fetch(sql, parameters=parameters, limit=limit, timeout_ms=timeout_ms, link=link))
    except (UsageError, sql_cli.QueryFailed) as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if args.format == "table":
        text = render_report(report, result, args.bar, filters)
    else:
        text = sql_cli.RENDER[args.format](result)
    if not sql_cli.emit(text):
        return 0
    if args.plot is not None:
        try:
            plot(report, result, args.plot, args.bar, filters)
        except UsageError as exc:
            print(exc, file=sys.stderr)
            return 1
        except OSError as exc:  # a folder that cannot be made or written
            print(f"cannot write the plot {args.plot}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0


def rows_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    names = [c["name"] for c in result["columns"]]
    return [dict(zip(names, row, strict=True)) for row in result["rows"]]


def label(report: Report, row: dict[str, Any]) -> str:
    if report.name == "model":
        return f"{row['provider']}/{row['model']}"
    if report.name == "conversation":
        return str(row["title"] or row["conversation_id"])
    value = row[report.key_names[0]]
    return "(none)" if value is None else str(value)


def metric(row: dict[str, Any], bar: str) -> float:
    value = {"tokens": row["total_tokens"], "cost": row["cost"], "calls": row["calls"]}[bar]
    return float(value or 0)


def money(value: float | None, currency: str | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f} {currency}" if value >= 0.01 or value == 0 else f"{value:.4f} {currency}"


def render_report(report: Report, result: dict[str, Any], bar: str, filters: Filters) -> str:
    """The report as a table with a bar per row, its totals, and notes on unpriced and estimated calls."""
    rows = rows_of(result)
    if not rows:
        return f"no model calls{_window(filters)}"
    top = max(metric(row, bar) for row in rows) or 1.0
    headings = [report.name, *(h for _, h in SHOWN), "cost", f"bar: {bar}"]
    table = [
        [
            _cut(label(report, row), 40),
            *(f"{row[key] or 0:,}" for key, _ in SHOWN),
            money(row["cost"], row["currency"]),
            _bar(metric(row, bar) / top),
        ]
        for row in rows
    ]
    totals = {key: sum(row[key] or 0 for row in rows) for key, _ in SHOWN}
    currencies = {row["currency"] for row in rows if row["cost"] is not None}
    if len(currencies) == 1:
        total_cost = money(sum(row["cost"] for row in rows if row["cost"] is not None), currencies.pop())
    else:
        total_cost = "mixed" if currencies else "-"  # sums in different currencies do not add up
    footer = ["total", *(f"{totals[key]:,}" for key, _ in SHOWN), total_cost, ""]
    lines = [f"usage {report.about}{_window(filters)}", _grid(headings, table, footer)]
    unpriced = sum(row["unpriced_calls"] for row in rows)
    estimated = sum(row["estimated_calls"] for row in rows)
    if unpriced:
        have = "has" if unpriced == 1 else "have"
        lines.append(f"{plural(unpriced, 'call')} {have} no price: cost counts the others (set `price` on the model)")
    if estimated:
        tokens = "its tokens are an estimate" if estimated == 1 else "their tokens are estimates"
        lines.append(f"{plural(estimated, 'call')} reported no usage: {tokens}")
    if result["truncated"]:
        lines.append(sql_cli.truncation_note(result, api.MAX_QUERY_LIMIT))
    return "\n".join(lines)


def _window(filters: Filters) -> str:
    parts = []
    if filters.since:
        parts.append(f"since {_when(filters.since)}")
    if filters.until:
        parts.append(f"before {_when(filters.until)}")
    if filters.project:
        parts.append(f"in {filters.project}")
    return (", " + ", ".join(parts)) if parts else ""


def _when(value: dt.datetime) -> str:
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%d") if utc.time() == dt.time() else utc.strftime("%Y-%m-%d %H:%M UTC")


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _bar(share: float) -> str:
    eighths = round(max(0.0, min(1.0, share)) * BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")) or ("▏" if share > 0 else "")


def _grid(headings: list[str], rows: list[list[str]], footer: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in [*rows, footer])) for i, h in enumerate(headings)]

    def line(cells: list[str]) -> str:
        out = [cells[0].ljust(widths[0])]
        out += [cell.rjust(width) for cell, width in zip(cells[1:-1], widths[1:-1], strict=True)]
        out.append(cells[-1].ljust(widths[-1]))
        return "  ".join(out).rstrip()

    rule = "  ".join("─" * w for w in widths)
    return "\n".join([line(headings), rule, *(line(r) for r in rows), rule, line(footer)])


def plot(report: Report, result: dict[str, Any], path: Path, bar: str, filters: Filters) -> None:
    """The report as a chart: stacked bars of uncached input, cached input and output tokens per row
    (per day, a column chart; otherwise horizontal bars, the largest on top), cost on the side."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install it where openvaala is (the plot extra)") from None
    rows = rows_of(result)
    title = f"openvaala token usage {report.about}{_window(filters)}"
    if not rows:  # an empty history is an empty chart, as it is an empty report
        fig, ax = plt.subplots(figsize=(8, 3), dpi=130)
        ax.text(0.5, 0.5, "no model calls", ha="center", va="center", fontsize=12, color="#666666")
        ax.set_axis_off()
        ax.set_title(title, loc="left", fontsize=11)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
        plt.close(fig)
        return
    labels = [label(report, row) for row in rows]
    cached = [row["cached_input_tokens"] or 0 for row in rows]
    uncached = [(row["input_tokens"] or 0) - c for row, c in zip(rows, cached, strict=True)]
    output = [row["output_tokens"] or 0 for row in rows]
    colors = ("#4C78A8", "#9ECAE9", "#F58518")
    names = ("input (uncached)", "input (cached)", "output")
    by_day = report.name == "day"
    fig, ax = plt.subplots(figsize=(11, 5.5) if by_day else (10, max(3.0, 0.45 * len(rows) + 1.8)), dpi=130)
    positions = list(range(len(rows)))
    extra: tuple[list[Any], list[str]] = ([], [])  # the cost line's legend entry
    if not by_day:
        labels, uncached, cached, output = (list(reversed(v)) for v in (labels, uncached, cached, output))
        rows = list(reversed(rows))
    bottom = [0.0] * len(rows)
    for values, color, name in zip((uncached, cached, output), colors, names, strict=True):
        if by_day:
            ax.bar(positions, values, bottom=bottom, color=color, label=name, width=0.85)
        else:
            ax.barh(positions, values, left=bottom, color=color, label=name, height=0.7)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    tokens = FuncFormatter(lambda value, _: _short(value))
    priced = [row for row in rows if row["cost"] is not None]
    currencies = {row["currency"] for row in priced}
    if by_day:
        step = max(1, len(rows) // 12)
        ax.set_xticks(
            positions[::step], [labels[i][5:] if len(labels[i]) == 10 else labels[i] for i in positions][::step]
        )
        ax.yaxis.set_major_formatter(tokens)
        ax.set_ylabel("tokens")
        ax.set_xlim(-0.7, len(rows) - 0.3)
        ax.set_ylim(0, max(bottom) * 1.1)
        if priced and len(currencies) == 1:
            side = ax.twinx()
            costs = [row["cost"] or 0 for row in rows]
            side.plot(positions, costs, color="#2E7D32", linewidth=2, marker="o", markersize=2.5, label="cost")
            side.set_ylabel(f"cost ({currencies.pop()})")
            side.set_ylim(0, max(costs) * 1.1 or 1)
            side.spines[["top"]].set_visible(False)
            extra = side.get_legend_handles_labels()
    else:
        ax.set_yticks(positions, [_cut(text, 36) for text in labels])
        ax.xaxis.set_major_formatter(tokens)
        ax.set_xlabel("tokens")
        ax.set_ylim(-0.6, len(rows) - 0.4)
        for position, row, total in zip(positions, rows, bottom, strict=True):
            if row["cost"] is not None:
                text = money(row["cost"], row["currency"])
                ax.annotate(text, (total, position), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
        ax.margins(x=0.12)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y" if by_day else "x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    handles, names_shown = ax.get_legend_handles_labels()
    handles, names_shown = handles + list(extra[0]), names_shown + list(extra[1])
    ax.legend(handles, names_shown, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=4, frameon=False, fontsize=9)
    ax.set_title(title, loc="left", fontsize=11, pad=24)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def _short(value: float) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.0f}"
