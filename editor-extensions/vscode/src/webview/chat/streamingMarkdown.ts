// Markdown that grows by deltas. Finished blocks (up to the last blank line outside a code fence)
// are rendered once and appended; only the unfinished tail is rendered again, at most once per
// animation frame. A long answer therefore costs about as much as its last paragraph per delta.
import { parseFileReference } from "../../shared/context";
import { renderMarkdown, stableBoundary } from "./markdown";

export class StreamingMarkdown {
  private text = "";
  private stableEnd = 0;
  private scheduled = false;
  private readonly stable: HTMLElement;
  private readonly tail: HTMLElement;

  constructor(
    readonly element: HTMLElement,
    initial = "",
    private readonly schedule: (callback: () => void) => void = (callback) => requestAnimationFrame(callback),
  ) {
    this.stable = document.createElement("div");
    this.tail = document.createElement("div");
    this.stable.className = "md-stable";
    this.tail.className = "md-tail";
    element.append(this.stable, this.tail);
    this.text = initial;
    this.flush();
  }

  get value(): string {
    return this.text;
  }

  append(delta: string): void {
    this.text += delta;
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /** Renders everything now (e.g. before a screenshot or when the item completes). */
  flush(): void {
    const boundary = stableBoundary(this.text);
    if (boundary > this.stableEnd) {
      const block = document.createElement("div");
      block.innerHTML = renderMarkdown(this.text.slice(this.stableEnd, boundary));
      linkFiles(block);
      this.stable.append(...Array.from(block.childNodes));
      this.stableEnd = boundary;
    }
    this.tail.innerHTML = renderMarkdown(this.text.slice(this.stableEnd));
    linkFiles(this.tail);
  }

  /** The final text: rendered once as a whole, so that references and loose lists come out right. */
  finish(text: string): void {
    this.text = text;
    this.stableEnd = 0;
    this.stable.innerHTML = "";
    this.tail.innerHTML = renderMarkdown(text);
    linkFiles(this.tail);
  }
}

/** Inline code that names a file (`src/a.ts`, `src/a.ts:12`) becomes a link that opens it there. */
export function linkFiles(root: Element): void {
  for (const code of Array.from(root.querySelectorAll("code"))) {
    if (code.parentElement?.tagName === "PRE") continue;
    const reference = parseFileReference(code.textContent ?? "");
    if (!reference) continue;
    code.classList.add("file-link");
    code.dataset.path = reference.path;
    if (reference.line) code.dataset.line = String(reference.line);
    code.title = `Open ${reference.path}${reference.line ? ` at line ${reference.line}` : ""}`;
  }
}
