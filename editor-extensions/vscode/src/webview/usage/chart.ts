// A stacked bar chart of usage per day and model, drawn as SVG (no charting library, no CDN).
import { daysFrom, seriesOf, type UsageMetric, type UsageRow } from "../../usage/usageData";
import { formatTokens } from "../dom";

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#3794ff", "#89d185", "#cca700", "#f48771", "#b180d7", "#4ec9b0", "#ce9178", "#d16969", "#9cdcfe", "#c586c0"];

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

export function colorOf(index: number): string {
  return PALETTE[index % PALETTE.length] as string;
}

/** A round axis maximum: 1, 2 or 5 times a power of ten, at least `value`. */
export function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

export function drawChart(rows: UsageRow[], since: string, metric: UsageMetric, now = new Date()): SVGSVGElement {
  const days = daysFrom(since, now);
  const series = seriesOf(rows, metric);
  const width = 720;
  const height = 260;
  const margin = { top: 12, right: 12, bottom: 36, left: 52 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const totals = days.map((day) => series.reduce((sum, s) => sum + (s.values.get(day) ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": `${metric} per day` });

  for (let tick = 0; tick <= 4; tick++) {
    const value = (max / 4) * tick;
    const y = margin.top + plotHeight - (value / max) * plotHeight;
    root.append(svg("line", { x1: margin.left, x2: width - margin.right, y1: y, y2: y, class: "grid" }));
    root.append(svg("text", { x: margin.left - 6, y: y + 4, class: "axis", "text-anchor": "end" }, metric === "calls" ? String(value) : formatTokens(value)));
  }
  const slot = plotWidth / Math.max(days.length, 1);
  const barWidth = Math.max(2, Math.min(40, slot * 0.7));
  const labelEvery = Math.ceil(days.length / 10);
  days.forEach((day, index) => {
    const x = margin.left + index * slot + (slot - barWidth) / 2;
    let y = margin.top + plotHeight;
    series.forEach((s, seriesIndex) => {
      const value = s.values.get(day) ?? 0;
      if (value <= 0) return;
      const barHeight = (value / max) * plotHeight;
      y -= barHeight;
      const rect = svg("rect", { x, y, width: barWidth, height: barHeight, fill: colorOf(seriesIndex), class: "bar", "data-day": day, "data-series": s.key });
      rect.append(svg("title", {}, `${day} · ${s.key}: ${value.toLocaleString()}`));
      root.append(rect);
    });
    if (index % labelEvery === 0) {
      root.append(svg("text", { x: x + barWidth / 2, y: height - margin.bottom + 16, class: "axis", "text-anchor": "middle" }, day.slice(5)));
    }
  });
  root.append(svg("line", { x1: margin.left, x2: width - margin.right, y1: margin.top + plotHeight, y2: margin.top + plotHeight, class: "baseline" }));
  return root;
}
