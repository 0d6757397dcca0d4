// The usage panel in real headless Chromium: tokens by day and model drawn as SVG, with a legend.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { UsageRow } from "../../src/usage/usageData";
import { sinceDay } from "../../src/usage/usageData";
import { WebviewPage } from "../support/webviewPage";

function row(day: string, model: string, total: number, cost?: number): UsageRow {
  return {
    ...(cost !== undefined ? { cost, currency: "USD", unpricedCalls: 0 } : { unpricedCalls: 3 }),
    day,
    provider: "openai",
    model,
    calls: 3,
    inputTokens: Math.round(total * 0.8),
    cachedInputTokens: Math.round(total * 0.2),
    outputTokens: Math.round(total * 0.2),
    reasoningTokens: 0,
    totalTokens: total,
    estimatedCalls: 0,
    failedCalls: 0,
  };
}

describe("the usage panel in Chromium", { timeout: 30_000 }, () => {
  let page: WebviewPage;
  before(async () => {
    page = await WebviewPage.open("usage", { width: 900, height: 560 });
  });
  after(async () => {
    await page?.close();
  });

  it("charts tokens per day, stacked by model, and totals them in the legend", async () => {
    const since = sinceDay(7);
    const days = Array.from({ length: 7 }, (_, i) => new Date(Date.parse(`${since}T00:00:00Z`) + i * 86_400_000).toISOString().slice(0, 10));
    const rows = [
      row(days[1]!, "gpt-4.1", 120_000, 0.42),
      row(days[1]!, "gpt-4.1-mini", 40_000),
      row(days[3]!, "gpt-4.1", 60_000, 0.21),
      row(days[6]!, "gpt-4.1-mini", 15_000),
    ];
    assert.deepEqual(await page.posted(), [{ type: "ready" }]);
    // ten days of data: "Last 7 days", then all ten; never "Last 30 days" over ten days
    await page.send({ type: "usage", rows, since, days: 7, span: 10, truncated: false } as never);
    const p = page.page;
    assert.equal(await p.locator("svg.chart rect.bar").count(), 4);
    assert.deepEqual(await p.locator(`svg.chart rect.bar[data-day="${days[1]}"]`).evaluateAll((bars) => bars.map((bar) => bar.getAttribute("data-series"))), [
      "openai/gpt-4.1",
      "openai/gpt-4.1-mini",
    ]);
    const legend = await p.locator("table.legend tr").allTextContents();
    assert.equal(legend.length, 3);
    assert.match(legend[1] ?? "", /openai\/gpt-4\.1.*180k.*\$0\.63$/);
    assert.match(legend[2] ?? "", /openai\/gpt-4\.1-mini.*—$/);
    assert.match((await p.locator(".status").textContent()) ?? "", /235,000 tokens since .* · \$0\.63 \(6 calls without a price not counted\)/);
    assert.deepEqual(await p.locator("select").first().locator("option").allTextContents(), ["Last 7 days", "All 10 days of data"]);
    assert.equal(await p.locator("select").first().evaluate((select) => (select as HTMLSelectElement).selectedOptions[0]?.textContent), "Last 7 days");
    await page.screenshot("usage");
    await p.locator("select").first().selectOption("10");
    assert.deepEqual((await page.posted()).at(-1), { type: "range", days: 10 });
    assert.deepEqual(page.violations, []);
    assert.deepEqual(page.errors, []);
  });
});
