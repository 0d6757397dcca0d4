// The open conversation's header: title (rename), actions, the session's model and its context use.
import type { AlwaysAllowed, ContextUsage, Conversation, ModelDefinition, ModelRef, SessionContextUsage } from "../../protocol/generated";
import { modelKey, type ViewMessage } from "../../shared/messages";
import { clear, formatTokens, h, icon } from "../dom";

export class ConversationHeader {
  readonly element: HTMLElement;
  private readonly title: HTMLButtonElement;
  private readonly actions: HTMLElement;
  private readonly model: HTMLSelectElement;
  private readonly meter: HTMLElement;
  private readonly meterFill: HTMLElement;
  private readonly meterThreshold: HTMLElement;
  private readonly meterLabel: HTMLElement;
  private readonly state: HTMLElement;
  private readonly allowed: HTMLElement;
  private conversation: Conversation | undefined;
  private sessionId = "";
  private models: ModelDefinition[] = [];
  private currentModel: ModelRef | undefined;
  private context: ContextUsage | undefined;
  private threshold: number | undefined;

  constructor(
    private readonly post: (message: ViewMessage) => void,
    private readonly supports: (method: string) => boolean,
    sandboxBadge: HTMLElement,
  ) {
    this.title = h("button", { class: "conversation-heading", title: "Rename" });
    this.title.addEventListener("click", () => {
      if (this.conversation && this.supports("openvaala/setConversationTitle")) this.post({ type: "rename", conversationId: this.conversation.id });
    });
    this.actions = h("div", { class: "header-actions" });
    this.model = h("select", { class: "model-picker", title: "Model of this session", "aria-label": "Model" });
    this.model.addEventListener("change", () => {
      const model = this.models.find((m) => modelKey(m.ref) === this.model.value);
      if (model) this.post({ type: "setModel", sessionId: this.sessionId, model: model.ref });
    });
    this.meterFill = h("span", { class: "meter-fill" });
    this.meterThreshold = h("span", { class: "meter-threshold", title: "compaction threshold" });
    this.meterLabel = h("span", { class: "meter-label" });
    this.meter = h("div", { class: "context-meter", title: "Context window use" }, h("span", { class: "meter-bar" }, this.meterFill, this.meterThreshold), this.meterLabel);
    this.state = h("span", { class: "session-state" });
    this.allowed = h("span", { class: "always-allowed", hidden: true, tabindex: 0 });
    this.element = h(
      "header",
      { class: "conversation-header" },
      h(
        "div",
        { class: "header-row" },
        h("button", { class: "icon-button", title: "All conversations", "aria-label": "All conversations", "data-action": "back", onclick: () => this.post({ type: "back" }) }, icon("arrow-left")),
        this.title,
        this.actions,
      ),
      h("div", { class: "header-row meta" }, this.model, this.meter, this.allowed, this.state, sandboxBadge),
    );
  }

  show(conversation: Conversation, sessionId: string): void {
    this.conversation = conversation;
    this.sessionId = sessionId;
    this.title.textContent = conversation.title || "Untitled conversation";
    this.renderActions();
    this.renderAllowed(conversation.alwaysAllowed ?? []);
  }

  /** What the user allowed for the rest of the conversation (`allowAlways` answers). */
  private renderAllowed(rules: AlwaysAllowed[]): void {
    clear(this.allowed);
    this.allowed.hidden = rules.length === 0;
    if (rules.length === 0) return;
    const describe = (rule: AlwaysAllowed) =>
      `${rule.tool}: ${rule.commandPrefix ? `commands starting with "${rule.commandPrefix}"` : "every call"}` +
      (rule.outsideSandbox ? ", also outside the sandbox" : "");
    this.allowed.title = `Allowed for the rest of this conversation, without asking:\n${rules.map(describe).join("\n")}`;
    this.allowed.setAttribute("aria-label", this.allowed.title);
    this.allowed.append(icon("check-all"), h("span", {}, `${rules.length} always allowed`));
  }

  private renderActions(): void {
    const conversation = this.conversation;
    clear(this.actions);
    if (!conversation) return;
    const id = conversation.id;
    const button = (action: string, name: string, title: string, message: ViewMessage, extra = "") =>
      h("button", { class: `icon-button ${extra}`, title, "aria-label": title, "data-action": action, onclick: () => this.post(message) }, icon(name));
    if (this.supports("openvaala/compactContext")) this.actions.append(button("compact", "fold", "Compact the context now", { type: "compact" }));
    if (this.supports("openvaala/setConversationArchived")) {
      this.actions.append(
        button("archive", conversation.archived ? "inbox" : "archive", conversation.archived ? "Unarchive" : "Archive", { type: "archive", conversationId: id, archived: !conversation.archived }),
      );
    }
    if (this.supports("openvaala/deleteConversation")) this.actions.append(button("delete", "trash", "Delete", { type: "delete", conversationId: id }, "danger"));
  }

  setModels(models: ModelDefinition[], fallback?: ModelRef): void {
    this.models = models;
    if (!this.currentModel && fallback) this.currentModel = fallback;
    this.renderModels();
  }

  setSessionModel(model: ModelRef | undefined): void {
    if (model) this.currentModel = model;
    this.renderModels();
  }

  private renderModels(): void {
    clear(this.model);
    const current = this.currentModel ? modelKey(this.currentModel) : "";
    const known = this.models.some((m) => modelKey(m.ref) === current);
    if (current && !known) this.model.append(h("option", { value: current }, current));
    for (const model of this.models) {
      const key = modelKey(model.ref);
      this.model.append(h("option", { value: key, selected: key === current }, model.displayName ?? key));
    }
    this.model.value = current;
    this.model.disabled = !this.supports("openvaala/setSessionModel") || this.models.length < 2;
    this.model.hidden = this.models.length === 0 && !current;
  }

  setContext(context: ContextUsage | undefined): void {
    this.context = context;
    this.renderMeter();
  }

  setUsage(usage: SessionContextUsage): void {
    this.threshold = usage.thresholdTokens;
    this.context = usage.nextRequest;
    this.renderMeter();
  }

  private renderMeter(): void {
    const context = this.context;
    if (!context || context.window <= 0) {
      this.meter.hidden = true;
      return;
    }
    this.meter.hidden = false;
    const share = Math.min(1, context.tokens / context.window);
    this.meterFill.style.width = `${(share * 100).toFixed(1)}%`;
    this.meter.classList.toggle("near", this.threshold !== undefined && context.tokens >= this.threshold * 0.9);
    if (this.threshold !== undefined && this.threshold > 0) {
      this.meterThreshold.hidden = false;
      this.meterThreshold.style.left = `${Math.min(100, (this.threshold / context.window) * 100).toFixed(1)}%`;
    } else {
      this.meterThreshold.hidden = true;
    }
    const estimated = context.source === "estimated" ? "~" : context.source === "unknown" ? "?" : "";
    this.meterLabel.textContent = `${estimated}${formatTokens(context.tokens)} / ${formatTokens(context.window)}`;
    this.meter.title =
      `Context: ${context.tokens} of ${context.window} tokens (${context.source})` +
      (this.threshold !== undefined ? `; compacts at ${this.threshold}` : "");
  }

  setState(text: string, busy: boolean): void {
    this.state.textContent = text;
    this.state.classList.toggle("busy", busy);
  }
}
