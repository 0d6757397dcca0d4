// The input box. Enter sends; while a turn runs, Enter queues the input for the next turn,
// Ctrl/Cmd+Enter steers it into the running turn and Alt+Enter interrupts the turn and runs it.
// Pasted images become `{type: "image", mimeType, data}` content.
// Typing "@" offers the workspace's files (the host ranks them); a file picked there, and the
// selection or file the editor added ("Add Selection to Chat"), go with the message as context.
import type { ContentInput, SessionInputMode } from "../../protocol/generated";
import { contextLabel, mentionAt, mentionsIn } from "../../shared/context";
import type { ContextRef, MentionItem } from "../../shared/messages";
import { clear, h, icon } from "../dom";

export interface ComposerEvents {
  submit(content: ContentInput[], mode: SessionInputMode, context: ContextRef[]): void;
  interrupt(): void;
  /** Asks the host for the files matching an @-mention being typed. */
  mentionQuery(requestId: number, query: string): void;
}

interface Attachment {
  mimeType: string;
  data: string;
}

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export class Composer {
  readonly element: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly attachments: HTMLElement;
  private readonly send: HTMLButtonElement;
  private readonly steer: HTMLButtonElement;
  private readonly stop: HTMLButtonElement;
  private readonly hint: HTMLElement;
  private images: Attachment[] = [];
  private contexts: ContextRef[] = [];
  private running = false;
  private canSteer = false;
  private readonly mentionList: HTMLElement;
  private mentionItems: MentionItem[] = [];
  private mentionIndex = 0;
  private mentionRequest = 0;
  private mention: { start: number; query: string } | undefined;
  /** Files picked from the completion: their @-mentions go as context. */
  private readonly picked = new Set<string>();

  constructor(private readonly events: ComposerEvents) {
    this.input = h("textarea", { class: "composer-input", rows: 3, placeholder: "Ask openvaala… (@ to add a file; Enter to send, Shift+Enter for a new line)", "aria-label": "Message" });
    this.input.addEventListener("keydown", (event) => this.onKey(event));
    this.input.addEventListener("paste", (event) => this.onPaste(event));
    this.input.addEventListener("input", () => {
      this.autosize();
      this.updateMention();
    });
    this.input.addEventListener("click", () => this.updateMention());
    this.input.addEventListener("blur", () => setTimeout(() => this.closeMentions(), 150));
    this.attachments = h("div", { class: "attachments" });
    this.mentionList = h("ul", { class: "mention-list", role: "listbox", hidden: true, "aria-label": "Files" });
    this.send = h("button", { class: "primary", "data-action": "send", title: "Send (Enter)" }, "Send");
    this.send.addEventListener("click", () => this.submit("queue"));
    this.steer = h("button", { "data-action": "steer-now", title: "Send into the running turn (Ctrl+Enter)", hidden: true }, "Steer");
    this.steer.addEventListener("click", () => this.submit("steer"));
    this.stop = h("button", { class: "danger", "data-action": "stop", title: "Stop the running turn", hidden: true }, "Stop");
    this.stop.addEventListener("click", () => this.events.interrupt());
    this.hint = h("span", { class: "composer-hint" });
    this.element = h(
      "div",
      { class: "composer" },
      this.attachments,
      this.mentionList,
      this.input,
      h("div", { class: "composer-bar" }, this.hint, h("span", { class: "spacer" }), this.stop, this.steer, this.send),
    );
  }

  focus(): void {
    this.input.focus();
  }

  /** Puts text back into the box (a withdrawn input). */
  restore(text: string): void {
    this.input.value = this.input.value ? `${text}\n${this.input.value}` : text;
    this.autosize();
    this.focus();
  }

  setRunning(running: boolean, canSteer: boolean): void {
    this.running = running;
    this.canSteer = canSteer;
    this.send.textContent = running ? "Queue" : "Send";
    this.send.title = running ? "Queue for the next turn (Enter)" : "Send (Enter)";
    this.steer.hidden = !(running && canSteer);
    this.stop.hidden = !running;
    this.hint.textContent = running
      ? canSteer
        ? "Running · Enter queues · Ctrl+Enter steers · Alt+Enter interrupts and sends"
        : "Running · Enter queues · Alt+Enter interrupts and sends"
      : "";
  }

  /** Attaches context to the next message (a selection, a file). */
  addContext(ref: ContextRef): void {
    const label = contextLabel(ref);
    this.contexts = this.contexts.filter((known) => contextLabel(known) !== label);
    this.contexts.push(ref);
    this.renderAttachments();
  }

  /** The host's answer to the completion's query (only the latest one counts). */
  showMentions(requestId: number, items: MentionItem[]): void {
    if (requestId !== this.mentionRequest || !this.mention) return;
    this.mentionItems = items;
    this.mentionIndex = 0;
    this.renderMentions();
  }

  private updateMention(): void {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const found = this.input.selectionStart === this.input.selectionEnd ? mentionAt(this.input.value, caret) : undefined;
    if (!found) {
      this.closeMentions();
      return;
    }
    if (this.mention && this.mention.query === found.query && this.mention.start === found.start) return;
    this.mention = found;
    this.events.mentionQuery(++this.mentionRequest, found.query);
  }

  private closeMentions(): void {
    this.mention = undefined;
    this.mentionItems = [];
    this.mentionList.hidden = true;
    clear(this.mentionList);
  }

  private renderMentions(): void {
    clear(this.mentionList);
    this.mentionList.hidden = this.mentionItems.length === 0;
    this.mentionItems.forEach((item, index) => {
      const slash = item.path.lastIndexOf("/");
      const row = h(
        "li",
        {
          class: `mention-item${index === this.mentionIndex ? " selected" : ""}`,
          role: "option",
          "aria-selected": index === this.mentionIndex ? "true" : "false",
          "data-path": item.path,
        },
        icon("file"),
        h("span", { class: "mention-name" }, item.path.slice(slash + 1)),
        h("span", { class: "mention-dir" }, slash > 0 ? item.path.slice(0, slash) : ""),
      );
      row.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.pickMention(index);
      });
      this.mentionList.append(row);
    });
  }

  private pickMention(index: number): void {
    const item = this.mentionItems[index];
    const mention = this.mention;
    if (!item || !mention) return;
    const caret = this.input.selectionStart ?? this.input.value.length;
    const value = this.input.value;
    const inserted = `@${item.path} `;
    this.input.value = value.slice(0, mention.start) + inserted + value.slice(caret);
    const at = mention.start + inserted.length;
    this.input.setSelectionRange(at, at);
    this.picked.add(item.path);
    this.closeMentions();
    this.autosize();
    this.input.focus();
  }

  private onKey(event: KeyboardEvent): void {
    if (!this.mentionList.hidden && this.mentionItems.length > 0) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        this.mentionIndex = (this.mentionIndex + step + this.mentionItems.length) % this.mentionItems.length;
        this.renderMentions();
        return;
      }
      if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.pickMention(this.mentionIndex);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeMentions();
        return;
      }
    }
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (event.altKey) this.submit("interrupt");
    else if ((event.ctrlKey || event.metaKey) && this.running && this.canSteer) this.submit("steer");
    else this.submit("queue");
  }

  private submit(mode: SessionInputMode): void {
    const text = this.input.value.trim();
    if (!text && this.images.length === 0 && this.contexts.length === 0) return;
    const content: ContentInput[] = [];
    if (text) content.push({ type: "text", text });
    for (const image of this.images) content.push({ type: "image", mimeType: image.mimeType, data: image.data });
    const mentioned: ContextRef[] = mentionsIn(text).map((path) => (this.picked.has(path) ? { path } : { path, optional: true }));
    const context = [...this.contexts, ...mentioned.filter((ref) => !this.contexts.some((known) => contextLabel(known) === ref.path))];
    this.events.submit(content, this.running ? mode : "queue", context);
    this.input.value = "";
    this.images = [];
    this.contexts = [];
    this.picked.clear();
    this.closeMentions();
    this.renderAttachments();
    this.autosize();
  }

  private onPaste(event: ClipboardEvent): void {
    const files = Array.from(event.clipboardData?.items ?? [])
      .filter((item) => item.kind === "file" && IMAGE_TYPES.has(item.type))
      .map((item) => item.getAsFile())
      .filter((file): file is File => file !== null);
    if (files.length === 0) return;
    event.preventDefault();
    for (const file of files) void this.addImage(file);
  }

  async addImage(file: Blob): Promise<void> {
    if (file.size > MAX_IMAGE_BYTES) {
      this.hint.textContent = `That image is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MiB.`;
      return;
    }
    const data = await new Promise<string>((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
      reader.onerror = () => reject(reader.error ?? new Error("cannot read the image"));
      reader.readAsDataURL(file);
    });
    this.images.push({ mimeType: file.type, data });
    this.renderAttachments();
  }

  private renderAttachments(): void {
    clear(this.attachments);
    this.contexts.forEach((ref, index) => {
      this.attachments.append(
        h(
          "span",
          { class: "context-chip", title: ref.uri ?? ref.path, "data-context": contextLabel(ref) },
          icon(ref.startLine !== undefined ? "selection" : "file"),
          h("span", {}, contextLabel(ref)),
          h("button", {
            class: "icon-button",
            title: "Remove",
            onclick: () => {
              this.contexts.splice(index, 1);
              this.renderAttachments();
            },
          }, icon("close")),
        ),
      );
    });
    this.images.forEach((image, index) => {
      this.attachments.append(
        h(
          "span",
          { class: "attachment-chip" },
          h("img", { src: `data:${image.mimeType};base64,${image.data}`, alt: "pasted image" }),
          h("button", {
            class: "icon-button",
            title: "Remove",
            onclick: () => {
              this.images.splice(index, 1);
              this.renderAttachments();
            },
          }, icon("close")),
        ),
      );
    });
  }

  private autosize(): void {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }
}
