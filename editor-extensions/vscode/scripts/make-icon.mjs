// Draws media/icon.png (the Marketplace icon, 256×256) from media/icon.svg with headless Chromium
// (playwright-core driving /usr/bin/chromium, or CHROMIUM=...; nothing is downloaded).
//   node scripts/make-icon.mjs
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const svg = readFileSync("media/icon.svg", "utf8");
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
try {
  const page = await browser.newPage({ viewport: { width: 256, height: 256 }, deviceScaleFactor: 1 });
  await page.setContent(`<!DOCTYPE html><html><body style="margin:0;background:transparent">${svg}</body></html>`);
  await page.locator("svg").screenshot({ path: "media/icon.png", omitBackground: true });
} finally {
  await browser.close();
}
