// Above the input box: queued inputs (steer, send now, withdraw) and approval prompts (allow once,
// allow always, deny). Both come and go with the session's events, in every window alike.
import type { Approval, PendingInput } from "../../client/timeline";
import type { ViewMessage } from "../../shared/messages";
import { h } from "../dom";
import { textOf } from "./itemView";

export class PendingPanel {
  readonly element: HTMLElement;
  private readonly rows = new Map<string, HTMLElement>();
  private running = false;

  constructor(
    private readonly post: (message: ViewMessage) => void,
    private readonly supports: (method: string) => boolean,
  ) {
    this.element = h("div", { class: "pending-panel", hidden: true, "aria-label": "Queued inputs" });
  }

  reset(inputs: PendingInput[]): void {
    for (const row of this.rows.values()) row.remove();
    this.rows.clear();
    for (const input of inputs) this.add(input);
  }

  add(input: PendingInput): void {
    const itemId = input.item.id;
    this.rows.get(itemId)?.remove();
    const text = textOf(input.item.content) || "(image)";
    const buttons: HTMLElement[] = [];
    if (this.supports("openvaala/steerInput")) {
      buttons.push(h("button", { "data-action": "steer", title: "Deliver into the running turn at its next model call", disabled: !this.running, onclick: () => this.post({ type: "steer", itemId }) }, "Steer"));
    }
    if (this.supports("openvaala/interruptTurnWithInput")) {
      buttons.push(h("button", { "data-action": "send-now", title: "Stop the running turn and run this now", disabled: !this.running, onclick: () => this.post({ type: "sendNow", itemId }) }, "Send now"));
    }
    if (this.supports("openvaala/withdrawInput")) {
      buttons.push(h("button", { "data-action": "withdraw", title: "Take it back into the input box", onclick: () => this.post({ type: "withdraw", itemId }) }, "Withdraw"));
    }
    const row = h(
      "div",
      { class: "pending-row", "data-item-id": itemId },
      h("span", { class: "badge" }, input.mode === "steer" ? "steering" : "queued"),
      h("span", { class: "pending-text", title: text }, text),
      h("span", { class: "pending-actions" }, ...buttons),
    );
    this.rows.set(itemId, row);
    this.element.append(row);
    this.element.hidden = false;
  }

  remove(itemId: string): void {
    this.rows.get(itemId)?.remove();
    this.rows.delete(itemId);
    this.element.hidden = this.rows.size === 0;
  }

  setRunning(running: boolean): void {
    this.running = running;
    for (const button of Array.from(this.element.querySelectorAll<HTMLButtonElement>("button[data-action=steer], button[data-action=send-now]"))) {
      button.disabled = !running;
    }
  }
}

function describeArguments(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

type Decision = "allowOnce" | "allowAlways" | "deny";

/** Where a prompt comes from, for the card: the main session's own calls say nothing; a sub-agent's
 * say which agent asks (`agentName` is unknown until its session reaches the view). */
export interface ApprovalOrigins {
  /** undefined: the main session's; else the sub-agent session's agent name, if known yet. */
  origin(sessionId: string): { agentName?: string } | undefined;
  /** Shows the waiting call in its (nested) session. */
  reveal(sessionId: string, itemId: string): void;
}

/** Approval prompts of the open conversation (its sub-agent sessions included). A prompt closes in
 * every window as soon as one answers (`approvalResolved`), and from a snapshot when it is over. */
export class ApprovalPanel {
  readonly element: HTMLElement;
  private readonly cards = new Map<string, HTMLElement>();

  constructor(
    private readonly post: (message: ViewMessage) => void,
    private readonly supports: (method: string) => boolean,
    private readonly origins: ApprovalOrigins,
  ) {
    this.element = h("div", { class: "approval-panel", hidden: true, role: "region", "aria-label": "Approvals" });
  }

  reset(approvals: Approval[]): void {
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
    for (const approval of approvals) this.add(approval);
  }

  has(itemId: string): boolean {
    return this.cards.has(itemId);
  }

  add({ itemId, sessionId, approval }: Approval): void {
    if (this.cards.has(itemId)) return; // the same prompt again (a snapshot after the event): keep its state
    const answerable = this.supports("openvaala/answerApproval");
    const status = h("div", { class: "approval-status muted", role: "status" });
    const buttons = h("div", { class: "approval-buttons approval-choices" });
    const setButtons = (enabled: boolean) => {
      for (const button of Array.from(card.querySelectorAll("button"))) button.disabled = !enabled;
    };
    const send = (decision: Decision, message?: string) => {
      setButtons(false);
      status.textContent = "Sending your answer…";
      this.post({ type: "approval", itemId, decision, ...(message ? { message } : {}) });
    };

    // Deny first asks what to tell the model instead (optional): Enter denies, Escape goes back.
    const reasonInput = h("textarea", {
      class: "deny-message",
      rows: 2,
      placeholder: "Tell the model why, or what to do instead (optional)",
      "aria-label": "Message for the model",
    });
    const denyForm = h(
      "div",
      { class: "deny-form", hidden: true },
      reasonInput,
      h(
        "div",
        { class: "approval-buttons" },
        h("button", { class: "danger", "data-decision": "deny-confirm", disabled: !answerable, onclick: () => send("deny", reasonInput.value.trim()) }, "Deny"),
        h("button", { "data-decision": "deny-cancel", disabled: !answerable, onclick: () => showButtons() }, "Back"),
      ),
    );
    const showButtons = () => {
      denyForm.hidden = true;
      buttons.hidden = false;
    };
    reasonInput.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send("deny", reasonInput.value.trim());
      } else if (event.key === "Escape") {
        event.preventDefault();
        showButtons();
      }
    });
    const allowAlwaysTitle = approval.command
      ? "Allow this command (its program and subcommand) for the rest of the conversation"
      : "Allow this tool for the rest of the conversation";
    buttons.append(
      h("button", { class: "primary", "data-decision": "allowOnce", disabled: !answerable, onclick: () => send("allowOnce") }, "Allow once"),
      h("button", { "data-decision": "allowAlways", disabled: !answerable, title: allowAlwaysTitle, onclick: () => send("allowAlways") }, "Allow always"),
      h(
        "button",
        {
          class: "danger",
          "data-decision": "deny",
          disabled: !answerable,
          title: "Refuse this call; you may tell the model why",
          onclick: () => {
            buttons.hidden = true;
            denyForm.hidden = false;
            reasonInput.focus();
          },
        },
        "Deny",
      ),
    );
    const origin = h("div", { class: "approval-origin", hidden: true });
    const card = h(
      "div",
      { class: "approval-card", "data-item-id": itemId, "data-session-id": sessionId, role: "alertdialog", "aria-label": `Allow ${approval.tool}?` },
      h("div", { class: "approval-title" }, "Allow ", h("code", {}, approval.tool), "?"),
      origin,
      approval.reason ? h("div", { class: "approval-reason" }, approval.reason) : null,
      approval.command ? h("pre", { class: "tool-command" }, h("span", { class: "prompt" }, "$ "), approval.command) : null,
      approval.paths && approval.paths.length ? h("ul", { class: "approval-paths" }, ...approval.paths.map((path) => h("li", {}, path))) : null,
      approval.command ? null : h("details", {}, h("summary", {}, "Arguments"), h("pre", { class: "tool-args" }, describeArguments(approval.arguments))),
      buttons,
      denyForm,
      status,
      answerable ? null : h("div", { class: "muted" }, "This server cannot take answers yet (no openvaala/answerApproval)."),
    );
    this.cards.set(itemId, card);
    this.showOrigin(card);
    this.element.append(card);
    this.element.hidden = false;
  }

  /** Says which sub-agent asks, on every card (again when a sub-agent's session reached the view). */
  refreshOrigins(): void {
    for (const card of this.cards.values()) this.showOrigin(card);
  }

  private showOrigin(card: HTMLElement): void {
    const element = card.querySelector<HTMLElement>(".approval-origin");
    const sessionId = card.dataset.sessionId;
    const itemId = card.dataset.itemId;
    if (!element || !sessionId || !itemId) return;
    const origin = this.origins.origin(sessionId);
    element.hidden = origin === undefined;
    element.replaceChildren();
    if (origin === undefined) return;
    const tool = card.querySelector(".approval-title code")?.textContent ?? "tool";
    card.setAttribute("aria-label", `Allow ${tool}? Asked by the sub-agent ${origin.agentName ?? ""}`.trimEnd());
    element.append(
      "Asked by the sub-agent ",
      origin.agentName ? h("strong", { class: "approval-agent" }, origin.agentName) : h("span", { class: "muted" }, "(starting…)"),
      " ",
      h(
        "button",
        { class: "link-button", "data-action": "reveal", title: "Show the call in the sub-agent's session", onclick: () => this.origins.reveal(sessionId, itemId) },
        "Show the call",
      ),
    );
  }

  /** What became of this window's answer when it did not count (another window was first, the
   * prompt is gone) or failed (the buttons come back so it can be sent again). */
  answered(itemId: string, outcome: "late" | "gone" | "failed", message: string): void {
    const card = this.cards.get(itemId);
    if (!card) return; // already closed by approvalResolved: nothing to say
    const status = card.querySelector(".approval-status");
    if (status) status.textContent = message;
    if (outcome === "failed") {
      for (const button of Array.from(card.querySelectorAll("button"))) button.disabled = false;
      return;
    }
    card.classList.add("answered-elsewhere");
  }

  remove(itemId: string): void {
    this.cards.get(itemId)?.remove();
    this.cards.delete(itemId);
    this.element.hidden = this.cards.size === 0;
  }
}
