// A FileChange's unified diff (hunks from the first `@@`, no file headers; PROTOCOL.md §4) turned
// back into the two texts VS Code's diff editor compares. The text before the change is rebuilt by
// reversing the hunks on the text after it, and only when every hunk's context and added lines are
// found exactly where the hunk says: a file changed since, or a diff the runtime cut, is never
// "reversed" into a wrong text. Then the hunks alone are shown, each side as the diff says it.

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The hunk's body lines, each with its marker (" ", "-", "+"). */
  lines: string[];
}

export interface ParsedDiff {
  hunks: Hunk[];
  /** The diff ends with a `[diff cut: ...]` line: the runtime left the rest out. */
  cut?: string;
  /** `\ No newline at end of file` after the old (`old`) or new (`new`) side's last line. */
  noNewline: { old: boolean; new: boolean };
}

const HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

export function parseUnifiedDiff(diff: string): ParsedDiff {
  const hunks: Hunk[] = [];
  const parsed: ParsedDiff = { hunks, noNewline: { old: false, new: false } };
  let current: Hunk | undefined;
  let lastMarker = " ";
  const lines = diff.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (const line of lines) {
    const header = HEADER.exec(line);
    if (header) {
      current = {
        oldStart: Number(header[1]),
        oldLines: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newLines: header[4] === undefined ? 1 : Number(header[4]),
        lines: [],
      };
      hunks.push(current);
      continue;
    }
    if (line.startsWith("[diff cut:")) {
      parsed.cut = line;
      break;
    }
    if (line.startsWith("\\")) {
      if (lastMarker === "-") parsed.noNewline.old = true;
      else if (lastMarker === "+") parsed.noNewline.new = true;
      else parsed.noNewline = { old: true, new: true };
      continue;
    }
    if (!current) continue;
    const marker = line[0] ?? " ";
    current.lines.push(marker === "-" || marker === "+" ? line : ` ${line.slice(1)}`);
    lastMarker = marker;
  }
  return parsed;
}

function splitLines(text: string): { lines: string[]; finalNewline: boolean } {
  if (text === "") return { lines: [], finalNewline: false };
  const finalNewline = text.endsWith("\n");
  const lines = (finalNewline ? text.slice(0, -1) : text).split("\n");
  return { lines, finalNewline };
}

/**
 * The text before the change, from the text after it: every hunk's new side (context and added
 * lines) must stand at its place in `after`; undefined when one does not (changed since, or cut).
 */
export function reverseApply(diff: ParsedDiff, after: string): string | undefined {
  if (diff.cut) return undefined;
  const { lines, finalNewline } = splitLines(after.replace(/\r\n/g, "\n"));
  const out: string[] = [];
  let position = 0; // index into `lines`, 0-based
  for (const hunk of diff.hunks) {
    const start = hunk.newLines === 0 ? hunk.newStart : hunk.newStart - 1;
    if (start < position || start > lines.length) return undefined;
    out.push(...lines.slice(position, start));
    let at = start;
    let newCount = 0;
    let oldCount = 0;
    for (const line of hunk.lines) {
      const marker = line[0];
      const text = line.slice(1);
      if (marker === "-") {
        out.push(text);
        oldCount++;
        continue;
      }
      if (lines[at] !== text) return undefined;
      at++;
      newCount++;
      if (marker === " ") {
        out.push(text);
        oldCount++;
      }
    }
    if (newCount !== hunk.newLines || oldCount !== hunk.oldLines) return undefined;
    position = at;
  }
  if (diff.hunks.length === 0 && after !== "") return undefined;
  out.push(...lines.slice(position));
  if (out.length === 0) return "";
  // the old side's last line ends as the diff says (a "\ No newline" on it), else as the new side's
  const lastTouched = diff.hunks.length > 0 && position >= lines.length;
  const newline = lastTouched ? !diff.noNewline.old : finalNewline;
  return out.join("\n") + (newline ? "\n" : "");
}

/** The old and the new side of the hunks alone (when the whole texts cannot be had), each hunk
 * under a line naming where it is. */
export function hunkSides(diff: ParsedDiff): { before: string; after: string } {
  const before: string[] = [];
  const after: string[] = [];
  for (const hunk of diff.hunks) {
    const header = `⋯ @@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
    before.push(header);
    after.push(header);
    for (const line of hunk.lines) {
      const text = line.slice(1);
      if (line[0] !== "+") before.push(text);
      if (line[0] !== "-") after.push(text);
    }
  }
  if (diff.cut) {
    before.push(diff.cut);
    after.push(diff.cut);
  }
  return { before: before.join("\n") + "\n", after: after.join("\n") + "\n" };
}

/** The whole new text of an added file, from its diff alone (every line added). */
export function addedText(diff: ParsedDiff): string | undefined {
  if (diff.cut || diff.hunks.length !== 1) return diff.hunks.length === 0 && !diff.cut ? "" : undefined;
  const hunk = diff.hunks[0] as Hunk;
  if (hunk.lines.some((line) => line[0] !== "+")) return undefined;
  const text = hunk.lines.map((line) => line.slice(1)).join("\n");
  return text === "" ? "" : text + (diff.noNewline.new ? "" : "\n");
}

/** The whole old text of a deleted file, from its diff alone (every line removed). */
export function deletedText(diff: ParsedDiff): string | undefined {
  if (diff.cut || diff.hunks.length !== 1) return diff.hunks.length === 0 && !diff.cut ? "" : undefined;
  const hunk = diff.hunks[0] as Hunk;
  if (hunk.lines.some((line) => line[0] !== "-")) return undefined;
  const text = hunk.lines.map((line) => line.slice(1)).join("\n");
  return text === "" ? "" : text + (diff.noNewline.old ? "" : "\n");
}

export interface DiffTexts {
  before: string;
  after: string;
  /** Both sides are the whole file (else the hunks alone, or a note). */
  whole: boolean;
  /** Why the sides are not the whole file, in words. */
  note?: string;
}

/**
 * The two texts to compare for one file of a turn: `current` is the file's text on disk now
 * (undefined when it does not exist or cannot be read).
 */
export function diffTexts(
  change: { kind: string; diff?: string; binary?: boolean; skipped?: unknown[] },
  current: string | undefined,
): DiffTexts {
  if (change.binary) return { before: "", after: "", whole: false, note: "A binary file: no text to compare." };
  if (change.diff === undefined) {
    return { before: "", after: "", whole: false, note: "The runtime sent no diff for this file (left out by the checkpoint's limits)." };
  }
  const parsed = parseUnifiedDiff(change.diff);
  if (change.kind === "delete") {
    const before = deletedText(parsed);
    if (before !== undefined) return { before, after: "", whole: true };
  } else if (change.kind === "add") {
    if (current !== undefined && reverseApply(parsed, current) === "") return { before: "", after: current, whole: true };
    const after = addedText(parsed);
    if (after !== undefined) return { before: "", after, whole: true };
  } else if (current !== undefined) {
    const before = reverseApply(parsed, current);
    if (before !== undefined) return { before, after: current, whole: true };
  }
  const sides = hunkSides(parsed);
  const note = parsed.cut
    ? "The runtime cut this diff: only its first hunks are shown."
    : "The file changed since this turn: only the turn's hunks are shown.";
  return { ...sides, whole: false, note };
}
