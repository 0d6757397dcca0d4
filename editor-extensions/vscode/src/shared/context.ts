// Context from the editor for the model (@-mentioned files, a selection, the current file): each one
// a text part of the input that names its path and lines, so the model reads where it comes from,
// and the chat shows it as a chip, not as the whole text.
import type { ContextRef, MentionItem } from "./messages";

/** At most this much of one file goes into an input. */
export const MAX_CONTEXT_CHARS = 100_000;

/** "src/a.ts", "src/a.ts:12", "src/a.ts:12-20". */
export function contextLabel(ref: { path: string; startLine?: number; endLine?: number }): string {
  if (ref.startLine === undefined) return ref.path;
  if (ref.endLine === undefined || ref.endLine === ref.startLine) return `${ref.path}:${ref.startLine}`;
  return `${ref.path}:${ref.startLine}-${ref.endLine}`;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * The text part the model reads: `<file path="src/a.ts" lines="12-20">` and the text. `text` is the
 * file's (or the lines') text; a text over the limit is cut and says so.
 */
export function contextPart(ref: ContextRef, text: string, totalLines?: number): string {
  let body = text;
  let cut = "";
  if (body.length > MAX_CONTEXT_CHARS) {
    body = body.slice(0, MAX_CONTEXT_CHARS);
    cut = `\n[cut: the first ${MAX_CONTEXT_CHARS} of ${text.length} characters]`;
  }
  const lines = ref.startLine !== undefined ? ` lines="${ref.startLine}-${ref.endLine ?? ref.startLine}"` : "";
  const total = totalLines !== undefined && ref.startLine !== undefined ? ` of="${totalLines}"` : "";
  const newline = body.endsWith("\n") ? "" : "\n";
  return `<file path="${escapeAttribute(ref.path)}"${lines}${total}>\n${body}${newline}${cut ? `${cut}\n` : ""}</file>`;
}

export interface ParsedContext {
  path: string;
  startLine?: number;
  endLine?: number;
  body: string;
}

const PART = /^<file path="([^"]*)"(?: lines="(\d+)-(\d+)")?(?: of="\d+")?>\n([\s\S]*)<\/file>$/;

/** A text part made by `contextPart`, read back (for the chat to show it as a chip). */
export function parseContextPart(text: string): ParsedContext | undefined {
  const match = PART.exec(text);
  if (!match) return undefined;
  const path = (match[1] ?? "").replace(/&lt;/g, "<").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  return {
    path,
    ...(match[2] !== undefined ? { startLine: Number(match[2]), endLine: Number(match[3]) } : {}),
    body: match[4] ?? "",
  };
}

/** The @-mentions of a message: `@path` tokens (a path has no spaces), in order, each once. */
export function mentionsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(^|\s)@([^\s@]+)/g)) {
    const path = (match[2] ?? "").replace(/[.,;:!?)]+$/, "");
    if (path && !found.includes(path)) found.push(path);
  }
  return found;
}

/** The @-token being typed just before the caret ("" after a bare "@"), or undefined. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const before = text.slice(0, caret);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (!match) return undefined;
  const query = match[2] ?? "";
  return { start: caret - query.length - 1, query };
}

/**
 * Workspace files matching what was typed after "@": every character in order (case-insensitive),
 * best first: the name starting with the query, the name containing it, the path containing it,
 * then the rest; shorter paths first within each.
 */
export function rankMentions(paths: readonly string[], query: string, limit = 20): MentionItem[] {
  const q = query.toLowerCase();
  const scored: { path: string; score: number }[] = [];
  for (const path of paths) {
    const lower = path.toLowerCase();
    const name = lower.slice(lower.lastIndexOf("/") + 1);
    let score: number;
    if (q === "") score = 3;
    else if (name.startsWith(q)) score = 0;
    else if (name.includes(q)) score = 1;
    else if (lower.includes(q)) score = 2;
    else if (subsequence(lower, q)) score = 3;
    else continue;
    scored.push({ path, score });
  }
  scored.sort((a, b) => a.score - b.score || a.path.length - b.path.length || a.path.localeCompare(b.path));
  return scored.slice(0, limit).map(({ path }) => ({ path }));
}

function subsequence(text: string, query: string): boolean {
  let at = 0;
  for (const char of text) if (char === query[at] && ++at === query.length) return true;
  return at === query.length;
}

/** "a.ts:12" or "src/a.ts:12:5" or "src/a.ts#L12" in the chat: the path and the line (1-based). */
export function parseFileReference(text: string): { path: string; line?: number } | undefined {
  const trimmed = text.trim();
  const match = /^((?:[\w.@~-]+\/)*[\w@~-][\w.@~-]*\.[A-Za-z0-9]{1,10}|\/(?:[\w.@~-]+\/)*[\w.@~-]+)(?::(\d+)(?::\d+)?|#L(\d+))?$/.exec(trimmed);
  if (!match) return undefined;
  const line = match[2] ?? match[3];
  return { path: match[1] as string, ...(line ? { line: Number(line) } : {}) };
}
