// Whether shell commands run in the runtime's sandbox (`capabilities.experimental.openvaala.sandbox`):
// a small badge in the list's toolbar and in the conversation header; its tooltip says why, and a
// click opens the status command.
import type { SandboxState } from "../../client/rpc";
import type { ViewMessage } from "../../shared/messages";
import { sandboxSummary } from "../../shared/status";
import { clear, h, icon } from "../dom";

export class SandboxBadge {
  readonly element: HTMLButtonElement;

  constructor(post: (message: ViewMessage) => void) {
    this.element = h("button", { class: "sandbox-badge", hidden: true, "data-action": "sandbox" });
    this.element.addEventListener("click", () => post({ type: "command", command: "status" }));
  }

  /** `undefined` with `known: false`: no connection yet, nothing to say. */
  show(sandbox: SandboxState | undefined, known: boolean): void {
    clear(this.element);
    this.element.hidden = !known;
    if (!known) return;
    const summary = sandboxSummary(sandbox);
    const state = summary.usable === true ? "on" : summary.usable === false ? "off" : "unknown";
    this.element.dataset.sandbox = state;
    this.element.title = `${summary.label}: ${summary.detail}`;
    this.element.setAttribute("aria-label", `${summary.label}. ${summary.detail}`);
    this.element.append(icon(state === "on" ? "shield" : state === "off" ? "warning" : "question"), h("span", {}, summary.label));
  }
}
