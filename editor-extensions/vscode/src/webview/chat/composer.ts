// The input box. Enter sends; while a turn runs, Enter queues the input for the next turn,
// Ctrl/Cmd+Enter steers it into the running turn and Alt+Enter interrupts the turn and runs it.
// Pasted images become `{type: "image", mimeType, data}` content.
import type { ContentInput, SessionInputMode } from "../../protocol/generated";
import { clear, h, icon } from "../dom";

export interface ComposerEvents {
  submit(content: ContentInput[], mode: SessionInputMode): void;
  interrupt(): void;
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
  private running = false;
  private canSteer = false;

  constructor(private readonly events: ComposerEvents) {
    this.input = h("textarea", { class: "composer-input", rows: 3, placeholder: "Ask openvaala… (Enter to send, Shift+Enter for a new line)", "aria-label": "Message" });
    this.input.addEventListener("keydown", (event) => this.onKey(event));
    this.input.addEventListener("paste", (event) => this.onPaste(event));
    this.input.addEventListener("input", () => this.autosize());
    this.attachments = h("div", { class: "attachments" });
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

  private onKey(event: KeyboardEvent): void {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (event.altKey) this.submit("interrupt");
    else if ((event.ctrlKey || event.metaKey) && this.running && this.canSteer) this.submit("steer");
    else this.submit("queue");
  }

  private submit(mode: SessionInputMode): void {
    const text = this.input.value.trim();
    if (!text && this.images.length === 0) return;
    const content: ContentInput[] = [];
    if (text) content.push({ type: "text", text });
    for (const image of this.images) content.push({ type: "image", mimeType: image.mimeType, data: image.data });
    this.events.submit(content, this.running ? mode : "queue");
    this.input.value = "";
    this.images = [];
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
