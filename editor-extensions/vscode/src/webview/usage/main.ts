// The usage panel: tokens by day and model, a legend with totals and cost, and the range and metric
// pickers (the range never longer than the data under another name).
import type { UsageHostMessage, UsageViewMessage } from "../../shared/messages";
import { formatCost, rangeChoices, seriesOf, totalCost, type UsageMetric, type UsageRow } from "../../usage/usageData";
import { clear, formatTokens, h } from "../dom";
import { colorOf, drawChart } from "./chart";

interface VsCodeApi {
  postMessage(message: UsageViewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const METRICS: [UsageMetric, string][] = [
  ["totalTokens", "Total tokens"],
  ["inputTokens", "Input tokens"],
  ["outputTokens", "Output tokens"],
  ["calls", "Model calls"],
];

let rows: UsageRow[] = [];
let since = "";
let metric: UsageMetric = "totalTokens";

const range = h("select", { "aria-label": "Range" });
function showRanges(span: number | undefined, days: number): void {
  clear(range);
  for (const choice of rangeChoices(span)) range.append(h("option", { value: choice.days, selected: choice.days === days }, choice.label));
  range.value = String(days);
}
showRanges(undefined, 30);
range.addEventListener("change", () => vscode.postMessage({ type: "range", days: Number(range.value) }));
const metricSelect = h("select", { "aria-label": "Metric" }, ...METRICS.map(([value, label]) => h("option", { value }, label)));
metricSelect.addEventListener("change", () => {
  metric = metricSelect.value as UsageMetric;
  render();
});
const refresh = h("button", { onclick: () => vscode.postMessage({ type: "refresh" }) }, "Refresh");
const status = h("div", { class: "status" });
const chart = h("div", { class: "chart-box" });
const legend = h("table", { class: "legend" });

const app = document.getElementById("app");
app?.append(h("h1", {}, "openvaala usage"), h("div", { class: "controls" }, range, metricSelect, refresh), status, chart, legend);

/** A colour sample, styled through the CSSOM: the Content-Security-Policy forbids style attributes. */
function swatch(color: string): HTMLElement {
  const element = h("span", { class: "swatch" });
  element.style.background = color;
  return element;
}

function render(): void {
  clear(chart);
  clear(legend);
  if (rows.length === 0) {
    status.textContent = "No model calls in this range yet.";
    return;
  }
  chart.append(drawChart(rows, since, metric));
  const series = seriesOf(rows, metric);
  const all = seriesOf(rows, "totalTokens");
  const byKey = (key: string, field: keyof UsageRow) =>
    rows.filter((r) => `${r.provider}/${r.model}` === key).reduce((sum, r) => sum + Number(r[field]), 0);
  // cost only where the runtime has prices: "—" for a model without one
  const priced = rows.some((row) => row.cost !== undefined);
  const costCell = (modelRows: UsageRow[]) => {
    const total = totalCost(modelRows);
    const unpriced = modelRows.reduce((sum, r) => sum + (r.unpricedCalls ?? 0), 0);
    const text = total === undefined ? "—" : "mixed" in total ? "mixed currencies" : formatCost(total.cost, total.currency);
    return h("td", { class: "cost", title: unpriced ? `${unpriced} calls without a price are not in this` : "" }, unpriced && total !== undefined ? `${text}*` : text);
  };
  legend.append(
    h("tr", {}, h("th", {}, "Model"), h("th", {}, "Calls"), h("th", {}, "Input"), h("th", {}, "Cached"), h("th", {}, "Output"), h("th", {}, "Total"), priced ? h("th", {}, "Cost") : null),
  );
  series.forEach((s, index) => {
    legend.append(
      h(
        "tr",
        {},
        h("td", {}, swatch(colorOf(index)), s.key),
        h("td", {}, String(byKey(s.key, "calls"))),
        h("td", {}, formatTokens(byKey(s.key, "inputTokens"))),
        h("td", {}, formatTokens(byKey(s.key, "cachedInputTokens"))),
        h("td", {}, formatTokens(byKey(s.key, "outputTokens"))),
        h("td", {}, formatTokens(byKey(s.key, "totalTokens"))),
        priced ? costCell(rows.filter((r) => `${r.provider}/${r.model}` === s.key)) : null,
      ),
    );
  });
  const total = all.reduce((sum, s) => sum + s.total, 0);
  const estimated = rows.reduce((sum, r) => sum + r.estimatedCalls, 0);
  const failed = rows.reduce((sum, r) => sum + r.failedCalls, 0);
  const cost = totalCost(rows);
  const unpriced = rows.reduce((sum, r) => sum + (r.unpricedCalls ?? 0), 0);
  status.textContent =
    `${total.toLocaleString()} tokens since ${since}` +
    (cost === undefined ? "" : "mixed" in cost ? " · cost in several currencies" : ` · ${formatCost(cost.cost, cost.currency)}`) +
    (cost !== undefined && unpriced ? ` (${unpriced} ${unpriced === 1 ? "call" : "calls"} without a price not counted)` : "") +
    (estimated ? ` · ${estimated} calls estimated (the provider reported no usage)` : "") +
    (failed ? ` · ${failed} failed calls` : "");
}

window.addEventListener("message", (event: MessageEvent<UsageHostMessage>) => {
  const message = event.data;
  if (message.type === "usage") {
    rows = message.rows;
    since = message.since;
    showRanges(message.span, message.days);
    render();
    if (message.truncated) status.textContent += " (truncated)";
  } else if (message.type === "usageError") {
    clear(chart);
    status.textContent = message.message;
  }
});
vscode.postMessage({ type: "ready" });
