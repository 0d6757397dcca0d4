// Usage by day and model, from the runtime's `usage_daily` view through `openvaala/query` (per UTC
// day, workspace, agent, provider and model: calls, tokens by kind, estimated and failed calls, and
// `cost` with its `currency` where the calls had a price, `unpriced_calls` where they had none;
// schemas/README.md, "Usage analytics"). Summed here over workspaces and agents.
import type { QueryResult } from "../protocol/generated";

export const USAGE_COLUMNS = [
  "day",
  "provider",
  "model",
  "calls",
  "input_tokens",
  "cached_input_tokens",
  "output_tokens",
  "reasoning_tokens",
  "total_tokens",
  "estimated_calls",
  "failed_calls",
] as const;

/** The days since `?` (an ISO date), oldest first; `cost` only when every priced call of the group
 * had one currency (else NULL, never a sum of two currencies). */
export const USAGE_SQL =
  `SELECT day, provider, model, ${USAGE_COLUMNS.slice(3).map((c) => `sum(${c}) AS ${c}`).join(", ")}, ` +
  "CASE WHEN count(DISTINCT currency) <= 1 THEN sum(cost) END AS cost, " +
  "CASE WHEN count(DISTINCT currency) = 1 THEN any_value(currency) END AS currency, " +
  "sum(unpriced_calls) AS unpriced_calls " +
  "FROM usage_daily WHERE day >= CAST(? AS DATE) GROUP BY day, provider, model ORDER BY day, provider, model";

/** The first day with any model call (NULL when none). */
export const FIRST_DAY_SQL = "SELECT CAST(min(day) AS VARCHAR) AS first_day FROM usage_daily";

export interface UsageRow {
  day: string;
  provider: string;
  model: string;
  calls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  totalTokens: number;
  estimatedCalls: number;
  failedCalls: number;
  /** What the priced calls cost (absent: none was priced, or their currencies differ). */
  cost?: number;
  currency?: string;
  /** Calls without a price (not in `cost`). */
  unpricedCalls?: number;
}

export type UsageMetric = "totalTokens" | "inputTokens" | "outputTokens" | "calls";

function num(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
  return 0;
}

/** Rows of the query as objects, by column name (so a reordered view still reads right). */
export function parseUsage(result: QueryResult): UsageRow[] {
  const index = new Map(result.columns.map((column, position) => [column.name, position]));
  const get = (row: unknown[], name: string): unknown => {
    const position = index.get(name);
    return position === undefined ? undefined : row[position];
  };
  return result.rows.map((row) => ({
    day: String(get(row, "day") ?? ""),
    provider: String(get(row, "provider") ?? ""),
    model: String(get(row, "model") ?? ""),
    calls: num(get(row, "calls")),
    inputTokens: num(get(row, "input_tokens")),
    cachedInputTokens: num(get(row, "cached_input_tokens")),
    outputTokens: num(get(row, "output_tokens")),
    reasoningTokens: num(get(row, "reasoning_tokens")),
    totalTokens: num(get(row, "total_tokens")),
    estimatedCalls: num(get(row, "estimated_calls")),
    failedCalls: num(get(row, "failed_calls")),
    ...costOf(get(row, "cost"), get(row, "currency")),
    ...(index.has("unpriced_calls") ? { unpricedCalls: num(get(row, "unpriced_calls")) } : {}),
  }));
}

function costOf(cost: unknown, currency: unknown): { cost?: number; currency?: string } {
  if (cost === null || cost === undefined || cost === "") return {};
  const value = num(cost);
  return { cost: value, ...(typeof currency === "string" && currency ? { currency } : {}) };
}

/** "$1.23", "0.42 EUR", "<$0.01". */
export function formatCost(cost: number, currency: string | undefined): string {
  const small = cost > 0 && cost < 0.01;
  const shown = small ? "0.01" : cost.toFixed(2);
  if (currency === "USD" || currency === undefined) return `${small ? "<" : ""}$${shown}`;
  return `${small ? "<" : ""}${shown} ${currency}`;
}

/** What rows cost together: the sum and its currency, or undefined when none was priced or the
 * currencies differ (`mixed`). */
export function totalCost(rows: readonly UsageRow[]): { cost: number; currency?: string } | { mixed: true } | undefined {
  const priced = rows.filter((row) => row.cost !== undefined);
  if (priced.length === 0) return undefined;
  const currencies = new Set(priced.map((row) => row.currency ?? "USD"));
  if (currencies.size > 1) return { mixed: true };
  return { cost: priced.reduce((sum, row) => sum + (row.cost ?? 0), 0), currency: [...currencies][0] };
}

/** How many days of data there are, from the first day with a call to today (inclusive). */
export function dataSpan(firstDay: string | undefined, now = new Date()): number | undefined {
  if (!firstDay) return undefined;
  const first = Date.parse(`${firstDay.slice(0, 10)}T00:00:00Z`);
  if (Number.isNaN(first)) return undefined;
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Math.max(1, Math.round((today - first) / 86_400_000) + 1);
}

export const RANGES: readonly number[] = [7, 30, 90, 365];

/**
 * The range picker's choices for `span` days of data: "Last N days" only where the data covers the
 * N days, then "All N days" for the rest; never a range longer than the data under another name.
 */
export function rangeChoices(span: number | undefined): { days: number; label: string }[] {
  if (span === undefined) return RANGES.map((days) => ({ days, label: `Last ${days} days` }));
  const choices = RANGES.filter((days) => days <= span).map((days) => ({ days, label: `Last ${days} days` }));
  if (!RANGES.includes(span) && span < 365) {
    choices.push({ days: span, label: span === 1 ? "Today (all data)" : `All ${span} days of data` });
  }
  return choices;
}

/** The range shown: the one asked for, cut to the data there is. */
export function rangeDays(requested: number, span: number | undefined): number {
  return span === undefined ? requested : Math.min(requested, Math.max(span, 1));
}

/** The first day (UTC, ISO) of a range of `days` days ending today. */
export function sinceDay(days: number, now = new Date()): string {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
  return start.toISOString().slice(0, 10);
}

/** Every day from `since` to today, so that days without use show as gaps. */
export function daysFrom(since: string, now = new Date()): string[] {
  const days: string[] = [];
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let t = Date.parse(`${since}T00:00:00Z`); t <= end; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

export interface UsageSeries {
  key: string; // provider/model
  values: Map<string, number>; // by day
  total: number;
}

/** One series per provider/model, largest total first. */
export function seriesOf(rows: UsageRow[], metric: UsageMetric): UsageSeries[] {
  const byKey = new Map<string, UsageSeries>();
  for (const row of rows) {
    const key = `${row.provider}/${row.model}`;
    let series = byKey.get(key);
    if (!series) {
      series = { key, values: new Map(), total: 0 };
      byKey.set(key, series);
    }
    const value = row[metric];
    series.values.set(row.day, (series.values.get(row.day) ?? 0) + value);
    series.total += value;
  }
  return [...byKey.values()].sort((a, b) => b.total - a.total || a.key.localeCompare(b.key));
}

/** The panel's data for a range of `requested` days: the range cut to the data there is, its rows. */
export async function loadUsage(
  query: (sql: string, parameters: unknown[]) => Promise<QueryResult>,
  requested: number,
  now = new Date(),
): Promise<{ rows: UsageRow[]; since: string; days: number; span?: number; truncated: boolean }> {
  const first = await query(FIRST_DAY_SQL, []);
  const firstDay = first.rows[0]?.[0];
  const span = dataSpan(typeof firstDay === "string" ? firstDay : undefined, now);
  const days = rangeDays(requested, span);
  const since = sinceDay(days, now);
  const result = await query(USAGE_SQL, [since]);
  return { rows: parseUsage(result), since, days, ...(span !== undefined ? { span } : {}), truncated: result.truncated };
}
