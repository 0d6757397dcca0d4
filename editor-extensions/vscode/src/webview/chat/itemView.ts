// One item of a session on screen. Streaming items grow by deltas; a saved item replaces the
// streamed one in place (same element, rendered once more as a whole).
import type { Content, Item } from "../../protocol/generated";
import { diffLines } from "../../shared/diff";
import { presentTool, parseToolArguments } from "../../shared/tools";
import type { ViewMessage } from "../../shared/messages";
import { append, clear, h, icon } from "../dom";
import { StreamingMarkdown } from "./streamingMarkdown";
import { contextLabel, parseContextPart } from "../../shared/context";

export interface ViewContext {
  post(message: ViewMessage): void;
  supports(method: string): boolean;
  /** This window's clientId, to tell its own answers from another window's. */
  clientId(): string | undefined;
  /** The main session's running turn: it cannot be forked until it ends. */
  activeTurnId(): string | undefined;
}

const FORK_TITLE = "Fork: a new conversation with the history up to this turn";
const FORK_RUNNING_TITLE = "Fork after this turn once it has ended";

/** Enables the fork buttons of every turn but the running one. */
export function markRunningTurn(root: ParentNode, turnId: string | undefined): void {
  for (const button of Array.from(root.querySelectorAll<HTMLButtonElement>("button[data-action=fork]"))) {
    const running = turnId !== undefined && button.dataset.turnId === turnId;
    button.disabled = running;
    button.title = running ? FORK_RUNNING_TITLE : FORK_TITLE;
  }
}

export function textOf(content: Content[] | undefined): string {
  return (content ?? []).map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("");
}

const STATUS_LABELS: Record<string, string> = {
  streaming: "",
  completed: "",
  pending: "queued",
  withdrawn: "withdrawn",
  interrupted: "interrupted",
  awaitingApproval: "waiting for approval",
};

function statusBadge(status: string): HTMLElement | undefined {
  const label = STATUS_LABELS[status] ?? status;
  return label ? h("span", { class: `badge status-${status}` }, label) : undefined;
}

function images(content: Content[] | undefined): HTMLElement[] {
  return (content ?? [])
    .filter((part) => part.type === "image" && part.data && /^image\/(png|jpeg|gif|webp)$/.test(part.mimeType ?? ""))
    .map((part) => h("img", { class: "attachment", src: `data:${part.mimeType};base64,${part.data}`, alt: "image" }));
}

const TOOL_ICONS: Record<string, string> = {
  shell: "terminal",
  edit: "edit",
  write: "new-file",
  read: "file",
  search: "search",
  other: "tools",
};

function prettyJson(text: string): string {
  const parsed = parseToolArguments(text);
  return parsed === undefined ? text : JSON.stringify(parsed, null, 2);
}

/** A diff of `before` → `after` as a table of lines. */
export function renderDiff(path: string | undefined, before: string, after: string): HTMLElement {
  const rows = diffLines(before, after).map((line) =>
    h(
      "div",
      { class: `diff-line diff-${line.kind}` },
      h("span", { class: "diff-sign" }, line.kind === "added" ? "+" : line.kind === "removed" ? "-" : " "),
      h("span", { class: "diff-text" }, line.text),
    ),
  );
  return h("div", { class: "diff" }, path ? h("div", { class: "diff-path" }, path) : null, ...rows);
}

/** How an approval of this tool call ended, in words ("Allowed once by VS Code (this window)"). */
export interface ApprovalNote {
  decision: "allowOnce" | "allowAlways" | "deny";
  text: string;
}

export class ItemView {
  private root: HTMLElement;
  private markdown: StreamingMarkdown | undefined;
  private rawArguments: Text | undefined;
  private resultSlot: HTMLElement | undefined;
  private noteSlot: HTMLElement | undefined;
  private note: ApprovalNote | undefined;
  private current: Item;

  constructor(
    item: Item,
    private readonly context: ViewContext,
  ) {
    this.current = item;
    this.root = h("div", { class: "item", "data-item-id": item.id, ...(item.turnId ? { "data-turn-id": item.turnId } : {}) });
    this.render(item);
  }

  get element(): HTMLElement {
    return this.root;
  }

  get item(): Item {
    return this.current;
  }

  get callId(): string | undefined {
    return this.current.toolCall?.callId;
  }

  /** Re-renders from a whole item (a saved item replacing the streamed one). */
  update(item: Item): void {
    const wasOpen = this.element instanceof HTMLDetailsElement ? this.element.open : undefined;
    const streamedText = this.markdown?.value;
    this.current = item;
    if (this.markdown && (item.type === "assistantMessage" || item.type === "reasoning") && this.element.dataset.type === item.type) {
      // same element: render the final text once, keep the fold state
      const text = textOf(item.content);
      if (text !== streamedText || item.status !== "streaming") this.markdown.finish(text);
      this.setStatus(item);
      return;
    }
    const result = this.resultSlot?.firstChild ? this.resultSlot : undefined;
    this.render(item);
    if (result && this.resultSlot) {
      this.resultSlot.replaceWith(result);
      this.resultSlot = result;
    }
    if (wasOpen !== undefined && this.element instanceof HTMLDetailsElement) this.element.open = wasOpen;
  }

  appendDelta(delta: string): void {
    if (this.markdown) {
      this.markdown.append(delta);
      return;
    }
    const call = this.current.toolCall;
    if (this.current.type !== "toolCall" || !call) return;
    call.arguments += delta;
    if (this.rawArguments) this.rawArguments.appendData(delta);
    else this.update(this.current); // drawn as a finished call already: draw it again with the new text
  }

  /** Says how this call's approval ended and who decided (kept when the item is drawn again). */
  setApproval(note: ApprovalNote): void {
    this.note = note;
    this.renderNote();
  }

  private renderNote(): void {
    const slot = this.noteSlot;
    if (!slot) return;
    clear(slot);
    slot.hidden = this.note === undefined;
    if (!this.note) return;
    const denied = this.note.decision === "deny";
    slot.className = `approval-note ${denied ? "denied" : "allowed"}`;
    append(slot, icon(denied ? "circle-slash" : "pass"), h("span", {}, this.note.text));
  }

  /** Renders pending deltas now (used before measuring or taking a screenshot). */
  flush(): void {
    this.markdown?.flush();
  }

  /** Shows a tool result inside this tool call. */
  attachResult(result: Item): void {
    if (!this.resultSlot) return;
    clear(this.resultSlot);
    const failed = result.toolResult?.isError === true;
    const output = textOf(result.content);
    append(
      this.resultSlot,
      h("div", { class: "tool-result-label" }, failed ? "Failed" : "Output"),
      h("pre", { class: `tool-output${failed ? " error" : ""}` }, output || "(no output)"),
    );
    this.element.classList.toggle("failed", failed);
  }

  private setStatus(item: Item): void {
    this.element.dataset.status = item.status;
    const slot = this.element.querySelector(":scope > .item-head .status-slot, :scope > summary .status-slot");
    if (slot) {
      clear(slot);
      append(slot, statusBadge(item.status));
    }
  }

  private actions(item: Item): HTMLElement | undefined {
    const buttons: HTMLElement[] = [];
    const text = textOf(item.content);
    if (text) {
      buttons.push(
        h("button", { class: "icon-button", title: "Copy", "data-action": "copy", onclick: () => void navigator.clipboard?.writeText(text) }, icon("copy")),
      );
    }
    if (item.turnId && item.type === "assistantMessage" && this.context.supports("openvaala/forkConversation")) {
      const turnId = item.turnId;
      const running = this.context.activeTurnId() === turnId;
      buttons.push(
        h(
          "button",
          {
            class: "icon-button",
            title: running ? FORK_RUNNING_TITLE : FORK_TITLE,
            disabled: running,
            "data-action": "fork",
            "data-turn-id": turnId,
            onclick: () => this.context.post({ type: "fork", turnId }),
          },
          icon("repo-forked"),
        ),
      );
    }
    return buttons.length ? h("div", { class: "item-actions" }, ...buttons) : undefined;
  }

  private render(item: Item): void {
    const element = item.type === "reasoning" || item.type === "toolCall" ? "details" : "div";
    const fresh = element === this.root.tagName.toLowerCase() ? this.root : h(element, {});
    clear(fresh);
    fresh.className = `item item-${item.type}`;
    fresh.dataset.itemId = item.id;
    if (item.turnId) fresh.dataset.turnId = item.turnId;
    fresh.dataset.type = item.type;
    fresh.dataset.status = item.status;
    this.markdown = undefined;
    this.rawArguments = undefined;
    this.resultSlot = undefined;
    this.noteSlot = undefined;
    switch (item.type) {
      case "userMessage":
        this.renderUser(fresh, item);
        break;
      case "assistantMessage":
        append(fresh, h("div", { class: "item-head" }, h("span", { class: "status-slot" }, statusBadge(item.status)), this.actions(item)));
        this.markdown = new StreamingMarkdown(append2(fresh, h("div", { class: "md" })), textOf(item.content));
        break;
      case "reasoning": {
        append(fresh, h("summary", {}, h("span", { class: "label" }, "Reasoning"), h("span", { class: "status-slot" }, statusBadge(item.status))));
        this.markdown = new StreamingMarkdown(append2(fresh, h("div", { class: "md reasoning-body" })), textOf(item.content));
        break;
      }
      case "toolCall":
        this.renderToolCall(fresh as HTMLDetailsElement, item);
        break;
      case "toolResult":
        append(
          fresh,
          h("div", { class: "tool-result-label" }, `${item.toolResult?.name ?? "tool"} ${item.toolResult?.isError ? "failed" : "output"}`),
          h("pre", { class: `tool-output${item.toolResult?.isError ? " error" : ""}` }, textOf(item.content)),
        );
        break;
      case "compaction":
        append(
          fresh,
          h("div", { class: "compaction-line" }, "Context compacted"),
          h("details", {}, h("summary", {}, "Summary"), h("pre", { class: "compaction-text" }, textOf(item.content))),
        );
        break;
      case "error":
        append(fresh, h("div", { class: "error-text" }, textOf(item.content) || "error"));
        break;
      default:
        append(fresh, h("pre", {}, textOf(item.content)));
    }
    if (fresh !== this.root) {
      this.root.replaceWith(fresh);
      this.root = fresh;
    }
  }

  private renderUser(element: HTMLElement, item: Item): void {
    const from = item.from;
    const label =
      from && from.kind !== "user" ? `${from.kind}${from.name ? `: ${from.name}` : ""}` : undefined;
    // context from the editor (a file, a selection) shows as a chip that opens it, not as its text
    const texts: string[] = [];
    const chips: HTMLElement[] = [];
    for (const part of item.content ?? []) {
      if (part.type !== "text") continue;
      const context = parseContextPart(part.text ?? "");
      if (!context) {
        texts.push(part.text ?? "");
        continue;
      }
      chips.push(
        h(
          "span",
          {
            class: "context-chip file-link",
            "data-path": context.path,
            ...(context.startLine ? { "data-line": context.startLine } : {}),
            title: `Sent as context: ${contextLabel(context)} (click to open)`,
          },
          icon(context.startLine !== undefined ? "selection" : "file"),
          h("span", {}, contextLabel(context)),
        ),
      );
    }
    append(
      element,
      h("div", { class: "item-head" }, label ? h("span", { class: "from" }, label) : null, h("span", { class: "status-slot" }, statusBadge(item.status)), this.actions(item)),
      h("div", { class: "bubble" }, texts.join(""), chips.length ? h("div", { class: "context-chips" }, ...chips) : null, ...images(item.content)),
    );
  }

  private renderToolCall(element: HTMLDetailsElement, item: Item): void {
    const call = item.toolCall ?? { name: "tool", arguments: "", callId: "" };
    const presentation = presentTool(call.name, call.arguments);
    // arguments still streaming in (not yet JSON) show as they come; whole ones as the tool reads
    const argumentsStreaming = item.status === "streaming" && parseToolArguments(call.arguments) === undefined;
    element.open =
      item.status === "streaming" || item.status === "awaitingApproval" || presentation.kind === "edit" || presentation.kind === "write";
    append(
      element,
      h(
        "summary",
        {},
        h("span", { class: `tool-icon tool-${presentation.kind}` }, icon(TOOL_ICONS[presentation.kind] ?? "tools")),
        h("span", { class: "tool-name" }, call.name),
        presentation.path && presentation.summary === presentation.path && (presentation.kind === "edit" || presentation.kind === "write" || presentation.kind === "read")
          ? h("span", { class: "tool-summary" }, h("span", { class: "file-link", "data-path": presentation.path, title: `Open ${presentation.path}` }, presentation.summary))
          : h("span", { class: "tool-summary" }, presentation.summary),
        presentation.outsideSandbox ? h("span", { class: "badge outside-sandbox", title: "asks to run outside the sandbox" }, "unsandboxed") : null,
        h("span", { class: "status-slot" }, statusBadge(item.status)),
      ),
    );
    const body = h("div", { class: "tool-body" });
    if (argumentsStreaming) {
      this.rawArguments = document.createTextNode(call.arguments);
      append(body, h("pre", { class: "tool-args streaming" }, this.rawArguments));
    } else if (presentation.kind === "shell") {
      append(body, h("pre", { class: "tool-command" }, h("span", { class: "prompt" }, "$ "), presentation.command ?? ""));
    } else if (presentation.kind === "edit" || presentation.kind === "write") {
      append(body, renderDiff(presentation.path, presentation.before ?? "", presentation.after ?? ""));
    } else {
      append(body, h("pre", { class: "tool-args" }, prettyJson(call.arguments)));
    }
    this.noteSlot = h("div", { class: "approval-note", hidden: true, role: "note" });
    this.resultSlot = h("div", { class: "tool-result" });
    append(body, this.noteSlot, this.resultSlot);
    append(element, body);
    this.renderNote();
  }
}

function append2<T extends Node>(parent: Node, child: T): T {
  parent.appendChild(child);
  return child;
}
