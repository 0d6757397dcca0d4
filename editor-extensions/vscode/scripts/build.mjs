// Bundles the extension (Node, CommonJS, `vscode` external) and the webviews (browser IIFEs), and
// writes dist/ThirdPartyNotices.txt: the licence of every npm package the bundles contain (found
// from esbuild's metafile, so a package added to a bundle is never left out) and of the codicons.
//   node scripts/build.mjs [--watch] [--production]
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");
const production = process.argv.includes("--production");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "info",
  legalComments: "linked",
  metafile: true,
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

/** The packages a bundle holds: `node_modules/<name>/...` (scoped names too) of its inputs. */
function bundledPackages(metafile) {
  const names = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) names.add(match[1]);
  }
  return names;
}

function licenceOf(name) {
  const dir = join("node_modules", name);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((entry) => /^(licen[sc]e|copying)([-.][\w.-]*)?$/i.test(entry));
  if (!file) throw new Error(`${name} has no licence file: ThirdPartyNotices.txt cannot be complete`);
  return { name, version: manifest.version, licence: manifest.license ?? "see below", text: readFileSync(join(dir, file), "utf8").trim() };
}

export function writeNotices(metafiles) {
  const names = new Set(["@vscode/codicons"]); // its font and CSS are copied into dist/webview
  for (const metafile of metafiles) for (const name of bundledPackages(metafile)) names.add(name);
  const parts = [...names].sort().map(licenceOf).map(
    (p) => `${"=".repeat(78)}\n${p.name} ${p.version} (${p.licence})\n${"=".repeat(78)}\n\n${p.text}\n`,
  );
  const head =
    "openvaala for VS Code bundles the following third-party software in dist/. Each is listed with\n" +
    "its version, its licence and the licence text as it ships with the package.\n\n";
  writeFileSync(join("dist", "ThirdPartyNotices.txt"), head + parts.join("\n"));
  return [...names].sort();
}

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  const results = await Promise.all(builds.map((options) => esbuild.build(options)));
  if (!existsSync("dist")) mkdirSync("dist");
  writeNotices(results.map((result) => result.metafile));
}
