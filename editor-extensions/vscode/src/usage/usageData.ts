// Token usage by day and model, from the runtime's `usage_by_model_day` view through
// `openvaala/query` (DESCRIBE usage_by_model_day: day DATE, provider, model, calls, input_tokens,
// cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens, total_tokens,
// estimated_calls, failed_calls, latency_ms).
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

/** The days since `?` (an ISO date), oldest first. */
export const USAGE_SQL =
  `SELECT ${USAGE_COLUMNS.join(", ")} FROM usage_by_model_day WHERE day >= CAST(? AS DATE) ORDER BY day, provider, model`;

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
  }));
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
