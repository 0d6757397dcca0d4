// Markdown that grows by deltas. Finished blocks (up to the last blank line outside a code fence)
// are rendered once and appended; only the unfinished tail is rendered again, at most once per
// animation frame. A long answer therefore costs about as much as its last paragraph per delta.
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
      this.stable.append(...Array.from(block.childNodes));
      this.stableEnd = boundary;
    }
    this.tail.innerHTML = renderMarkdown(this.text.slice(this.stableEnd));
  }

  /** The final text: rendered once as a whole, so that references and loose lists come out right. */
  finish(text: string): void {
    this.text = text;
    this.stableEnd = 0;
    this.stable.innerHTML = "";
    this.tail.innerHTML = renderMarkdown(text);
  }
}
