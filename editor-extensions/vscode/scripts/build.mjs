// Bundles the extension (Node, CommonJS, `vscode` external) and the webviews (browser IIFEs).
//   node scripts/build.mjs [--watch] [--production]
import { copyFileSync, mkdirSync } from "node:fs";
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");
const production = process.argv.includes("--production");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "info",
  legalComments: "linked",
};

const builds = [
  {
    ...common,
    entryPoints: { extension: "src/host/extension.ts" },
    outdir: "dist",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  },
  {
    ...common,
    entryPoints: { chat: "src/webview/chat/main.ts", usage: "src/webview/usage/main.ts" },
    outdir: "dist/webview",
    platform: "browser",
    format: "iife",
    target: "chrome114",
  },
];

// the codicon font for the webviews' icons
mkdirSync("dist/webview", { recursive: true });
for (const file of ["codicon.css", "codicon.ttf"]) copyFileSync(`node_modules/@vscode/codicons/dist/${file}`, `dist/webview/${file}`);

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
