// Markdown of model output, rendered safely: markdown-it with raw HTML off (every `<` in the text
// is escaped), links limited to http(s) and mailto, images only from data: URLs. The webview's
// Content-Security-Policy forbids inline and remote scripts on top of that.
import MarkdownIt from "markdown-it";

const SAFE_LINK = /^(https?:|mailto:|#)/i;
const SAFE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,/i;

export const markdown = MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });

markdown.validateLink = (url: string): boolean => {
  const trimmed = url.trim();
  return SAFE_LINK.test(trimmed) || SAFE_IMAGE.test(trimmed);
};

const defaultImage = markdown.renderer.rules.image;
markdown.renderer.rules.image = (tokens, index, options, env, self) => {
  const src = String(tokens[index]?.attrGet("src") ?? "");
  if (!SAFE_IMAGE.test(src)) {
    // a remote image would be a beacon: show its alt text instead
    return markdown.utils.escapeHtml(tokens[index]?.content ?? "");
  }
  return defaultImage ? defaultImage(tokens, index, options, env, self) : "";
};

export function renderMarkdown(text: string): string {
  return markdown.render(text);
}

/** Where the text can be cut so that every part before it renders the same alone: after the last
 * blank line that is outside a fenced code block. 0 when there is none. */
export function stableBoundary(text: string): number {
  let fence: string | undefined;
  let boundary = 0;
  let position = 0;
  let previousBlank = false;
  while (position < text.length) {
    const end = text.indexOf("\n", position);
    if (end === -1) break; // the last line is still being written
    const line = text.slice(position, end);
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) fence = marker;
    else if (fence !== undefined && marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
    const blank = line.trim() === "";
    if (fence === undefined && blank && !previousBlank && position > 0) boundary = end + 1;
    previousBlank = blank;
    position = end + 1;
  }
  return boundary;
}
