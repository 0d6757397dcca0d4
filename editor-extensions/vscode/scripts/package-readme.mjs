// The README that goes into the .vsix (dist/README.package.md, packaged with `--readme-path` and
// `--no-rewrite-relative-links`): links and images to files the package holds stay relative (VS Code
// resolves them against the installed extension); links to anything else of the repository (the root
// README, its sections, files of this folder left out of the package) become the repository's URLs
// of those files on GitHub. vsce's own rewriting ignores `repository.directory` and made
// `blob/HEAD/../../README.md` and `raw/HEAD/docs/chat.png` of them.
//   node scripts/package-readme.mjs        (after the build; `npm run package` runs it)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { posix } from "node:path";

const manifest = JSON.parse(readFileSync("package.json", "utf8"));
const repository = manifest.repository.url.replace(/\.git$/, "").replace(/^git\+/, "");
const directory = manifest.repository.directory ?? "";

/** Whether the packaging keeps this file (the whitelist of .vscodeignore). */
function packaged(file) {
  const kept = readFileSync(".vscodeignore", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("!"))
    .map((line) => line.slice(1).trim());
  return kept.some((pattern) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`).test(file));
}

export function packageReadme(text) {
  return text.replace(/(!?)\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, bang, label, target) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) return whole;
    const [path, anchor] = target.split("#");
    const inFolder = posix.normalize(path);
    if (!inFolder.startsWith("../") && existsSync(inFolder) && packaged(inFolder)) return whole;
    const inRepository = posix.normalize(posix.join(directory, path));
    if (inRepository.startsWith("../")) throw new Error(`${target} is outside the repository`);
    if (!existsSync(posix.join(...Array(directory.split("/").length).fill(".."), inRepository))) {
      throw new Error(`README links to ${target}, which does not exist`);
    }
    const kind = bang ? "raw" : "blob";
    return `${bang}[${label}](${repository}/${kind}/HEAD/${inRepository}${anchor ? `#${anchor}` : ""})`;
  });
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) {
  writeFileSync("dist/README.package.md", packageReadme(readFileSync("README.md", "utf8")));
}
