// The .vsix as VS Code gets it: packaged here the way CI packages it (scripts/ci.sh), unpacked, and
// its README rendered from the package alone in headless Chromium (markdown-it, as VS Code's
// extension page renders it): every image loads from the package, every relative link names a file
// the package holds, every other link is the repository's URL of a file (and heading) that exists.
// The package has its icon and the bundled packages' licences (ThirdPartyNotices.txt).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { inflateRawSync } from "node:zlib";
import { describe, it } from "node:test";
import MarkdownIt from "markdown-it";
import { chromium } from "playwright-core";
import { ARTIFACTS, CHROMIUM, EXTENSION_ROOT, REPO_ROOT } from "../support/paths";
import { CHROMIUM_FLAGS } from "../support/webviewPage";

/** The files of a zip archive (stored or deflated), by name. */
function unzip(archive: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let end = archive.length - 22;
  while (end >= 0 && archive.readUInt32LE(end) !== 0x06054b50) end--;
  assert.ok(end >= 0, "a zip archive");
  const count = archive.readUInt16LE(end + 10);
  let at = archive.readUInt32LE(end + 16);
  for (let index = 0; index < count; index++) {
    assert.equal(archive.readUInt32LE(at), 0x02014b50);
    const method = archive.readUInt16LE(at + 10);
    const size = archive.readUInt32LE(at + 20);
    const nameLength = archive.readUInt16LE(at + 28);
    const extra = archive.readUInt16LE(at + 30);
    const comment = archive.readUInt16LE(at + 32);
    const local = archive.readUInt32LE(at + 42);
    const name = archive.toString("utf8", at + 46, at + 46 + nameLength);
    const dataAt = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
    const raw = archive.subarray(dataAt, dataAt + size);
    files.set(name, method === 0 ? Buffer.from(raw) : inflateRawSync(raw));
    at += 46 + nameLength + extra + comment;
  }
  return files;
}

/** GitHub's anchor of a heading: lower case, punctuation out, spaces as dashes. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-");
}

function headings(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] ?? "")));
}

describe("the packaged .vsix", { timeout: 180_000 }, () => {
  it("renders its README from the package with every image and link resolving, with an icon and the licences", async () => {
    const work = mkdtempSync(join(tmpdir(), "ov-vsix-"));
    try {
      const vsix = join(work, "openvaala.vsix");
      execFileSync("node", ["scripts/package-readme.mjs"], { cwd: EXTENSION_ROOT });
      execFileSync(
        join(EXTENSION_ROOT, "node_modules", ".bin", "vsce"),
        ["package", "--no-dependencies", "--readme-path", "dist/README.package.md", "--no-rewrite-relative-links", "--out", vsix],
        { cwd: EXTENSION_ROOT, stdio: "pipe" },
      );
      const files = unzip(readFileSync(vsix));
      const inPackage = (path: string) => files.has(`extension/${path}`);
      const manifest = JSON.parse(files.get("extension/package.json")!.toString("utf8")) as { icon?: string; repository: { url: string; directory: string } };

      // the icon: a PNG in the package
      assert.equal(manifest.icon, "media/icon.png");
      assert.deepEqual([...files.get("extension/media/icon.png")!.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG");
      // the licences of what the bundles hold, markdown-it's among them
      const notices = files.get("extension/dist/ThirdPartyNotices.txt")?.toString("utf8") ?? "";
      assert.match(notices, /^markdown-it [\d.]+ \(MIT\)$/m);
      assert.match(notices, /Copyright \(c\) 2014 Vitaly Puzrin, Alex Kocharin\./);
      for (const name of ["linkify-it", "mdurl", "punycode.js", "uc.micro", "vscode-languageclient", "vscode-jsonrpc", "@vscode/codicons"]) {
        assert.match(notices, new RegExp(`^${name.replace(/[.@/]/g, "\\$&")} [\\d.]+ \\(`, "m"), `${name} is in ThirdPartyNotices.txt`);
      }
      assert.ok(inPackage("LICENSE.txt") || inPackage("LICENSE"), "the extension's own licence");

      // the README, from the package only
      const readme = files.get("extension/readme.md")?.toString("utf8");
      assert.ok(readme, "the package has its README");
      const rendered = new MarkdownIt({ html: false, linkify: false }).render(readme);
      const images = [...rendered.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1] as string);
      const links = [...rendered.matchAll(/<a href="([^"]+)"/g)].map((m) => (m[1] as string).replace(/&amp;/g, "&"));
      assert.ok(images.length >= 1 && links.length >= 3, `images ${images.length}, links ${links.length}`);
      const repository = manifest.repository.url.replace(/\.git$/, "");
      const own = headings(readme);
      const problems: string[] = [];
      for (const target of [...images, ...links]) {
        if (target.startsWith("#")) {
          if (!own.has(target.slice(1))) problems.push(`${target}: no such heading in the README`);
        } else if (target.startsWith(`${repository}/`)) {
          // the repository's own files: the file (and its heading) exist in this commit of it
          const match = /^\/(blob|raw|tree)\/HEAD\/([^#]+)(?:#(.*))?$/.exec(target.slice(repository.length));
          if (!match) {
            problems.push(`${target}: not a file of the repository`);
            continue;
          }
          const file = join(REPO_ROOT, decodeURIComponent(match[2] as string));
          let text: string;
          try {
            text = readFileSync(file, "utf8");
          } catch {
            problems.push(`${target}: ${match[2]} does not exist`);
            continue;
          }
          if (match[3] && !headings(text).has(match[3])) problems.push(`${target}: no heading #${match[3]} in ${match[2]}`);
        } else if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
          if (!/^(https|mailto):/.test(target)) problems.push(`${target}: not https`);
        } else {
          const path = posix.normalize(target.split("#")[0] as string);
          if (!inPackage(path)) problems.push(`${target}: not in the package`);
        }
      }
      assert.deepEqual(problems, []);

      // rendered in Chromium from the unpacked package: every image loads
      const root = join(work, "unpacked");
      for (const [name, data] of files) {
        if (!name.startsWith("extension/")) continue;
        const path = join(root, name.slice("extension/".length));
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, data);
      }
      const page = join(root, "readme.html");
      writeFileSync(
        page,
        `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{font:14px system-ui,sans-serif;max-width:860px;margin:16px auto;background:#1e1e1e;color:#ccc}img{max-width:100%}a{color:#3794ff}code{background:#2a2a2a}</style></head><body>${rendered}</body></html>`,
      );
      const profile = mkdtempSync(join(tmpdir(), "ov-chromium-"));
      const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, viewport: { width: 900, height: 900 } });
      try {
        await browser.route("**/*", (route) => (route.request().url().startsWith("file:") ? route.continue() : route.abort()));
        const tab = browser.pages()[0] ?? (await browser.newPage());
        await tab.goto(`file://${page}`);
        const loaded = await tab.evaluate(() =>
          Array.from((globalThis as unknown as { document: { images: ArrayLike<{ complete: boolean; naturalWidth: number; src: string }> } }).document.images).map((image) => ({
            src: image.src,
            ok: image.complete && image.naturalWidth > 0,
          })),
        );
        assert.ok(loaded.length >= 1);
        assert.deepEqual(loaded.filter((image) => !image.ok), [], "every image of the README loads from the package");
        mkdirSync(ARTIFACTS, { recursive: true });
        await tab.screenshot({ path: join(ARTIFACTS, "vsix-readme.png") });
      } finally {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
