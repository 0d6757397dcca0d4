// A session's timeline on screen: items in ordinal order, streamed items after them, tool results
// inside their calls, sub-agent sessions nested where they started. Applies TimelineOps one by one.
import type { Item, LoggedItem, Session } from "../../protocol/generated";
import type { ApprovalOutcome, TimelineOp, TimelineSnapshot } from "../../client/timeline";
import { describeDecision } from "../../shared/approvals";
import { h } from "../dom";
import type { TurnInfo, ViewMessage } from "../../shared/messages";
import { ItemView, type ViewContext } from "./itemView";
import { TurnFooter } from "./turnFooter";

const NESTED_OFFSET = 0.5; // a sub-session sorts right after the parent item it is anchored to
const FOOTER_OFFSET = 0.9; // a turn's footer sorts after its last item (and a sub-session anchored there)

export interface SessionViewEvents {
  /** Something the app shows outside the timeline (pending inputs, approvals, status, ...). */
  other(op: TimelineOp): void;
  /** Content grew: keep the view scrolled to the bottom if it was there. */
  grew(): void;
}

export class SessionView {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly earlier: HTMLButtonElement;
  private readonly views = new Map<string, ItemView>();
  private readonly calls = new Map<string, ItemView>(); // tool call views by callId
  private readonly results = new Map<string, Item>(); // results whose call is not on screen yet, by callId
  private readonly children = new Map<string, SessionView>();
  private readonly outcomes = new Map<string, ApprovalOutcome>(); // how approvals ended, by item id
  private readonly footers = new Map<string, TurnFooter>(); // by turn id

  constructor(
    readonly session: Session,
    private readonly context: ViewContext,
    private readonly events: SessionViewEvents,
    nested: boolean,
  ) {
    this.earlier = h("button", { class: "link-button load-earlier", hidden: true }, "Load earlier messages");
    this.earlier.addEventListener("click", () => {
      this.earlier.disabled = true;
      context.post({ type: "loadEarlier", sessionId: session.id });
    });
    this.list = h("div", { class: "items" });
    if (nested) {
      const model = session.model.model ? `${session.model.model.provider}/${session.model.model.name}` : "";
      this.element = h(
        "details",
        { class: "subsession", open: true, "data-session-id": session.id },
        h("summary", {}, h("span", { class: "label" }, `Sub-agent: ${session.agentName}`), h("span", { class: "muted" }, model)),
        this.earlier,
        this.list,
      );
    } else {
      this.element = h("div", { class: "session", "data-session-id": session.id }, this.earlier, this.list);
    }
  }

  get sessionId(): string {
    return this.session.id;
  }

  /** Replaces everything with a snapshot (on open, or when the view reloaded). */
  renderSnapshot(snapshot: TimelineSnapshot): void {
    for (const view of this.views.values()) view.element.remove();
    this.views.clear();
    this.calls.clear();
    this.results.clear();
    for (const outcome of snapshot.outcomes) this.outcomes.set(outcome.itemId, outcome);
    const fragment = document.createDocumentFragment();
    for (const logged of snapshot.items) fragment.append(this.createSaved(logged));
    for (const streamed of snapshot.streaming) fragment.append(this.createStreaming(streamed.item));
    this.list.prepend(fragment);
    // sub-sessions stay (they are sessions of their own) but go back where their anchor says
    for (const child of this.children.values()) this.insertByOrdinal(child.element, Number(child.element.dataset.ordinal));
    for (const turnId of this.footers.keys()) this.placeFooter(turnId);
    this.earlier.hidden = !snapshot.hasEarlier;
    this.earlier.disabled = false;
    this.events.grew();
  }

  apply(op: TimelineOp): void {
    switch (op.op) {
      case "saved":
        this.saved(op.ordinal, op.item);
        if (op.item.turnId && this.footers.has(op.item.turnId)) this.placeFooter(op.item.turnId);
        this.events.grew();
        return;
      case "streaming": {
        const existing = this.views.get(op.item.id);
        if (existing) existing.update(op.item);
        else this.list.append(this.createStreaming(op.item));
        this.events.grew();
        return;
      }
      case "delta":
        this.views.get(op.itemId)?.appendDelta(op.delta);
        this.events.grew();
        return;
      case "removed": {
        const view = this.views.get(op.itemId);
        if (view && view.element.dataset.ordinal === undefined) {
          view.element.remove();
          this.views.delete(op.itemId);
        }
        return;
      }
      case "earlier":
        this.prepend(op.items, op.hasEarlier);
        return;
      case "approvalClosed":
        if (op.outcome) {
          this.outcomes.set(op.itemId, op.outcome);
          this.showOutcome(this.views.get(op.itemId));
        }
        this.events.other(op);
        return;
      default:
        this.events.other(op);
    }
  }

  /** What the view knows of a turn (how it ended, its files, undone): shown under its last item. */
  setTurnInfo(info: TurnInfo, post: (message: ViewMessage) => void, root: () => string | undefined): void {
    let footer = this.footers.get(info.turnId);
    if (!footer) {
      footer = new TurnFooter(info, post, (method) => this.context.supports(method), root);
      this.footers.set(info.turnId, footer);
    } else {
      footer.update(info);
    }
    this.placeFooter(info.turnId);
    this.events.grew();
  }

  /** The footer of a turn, by its id or by the id of the revert that undid it. */
  footer(turnId: string): TurnFooter | undefined {
    return this.footers.get(turnId) ?? [...this.footers.values()].find((footer) => footer.element.dataset.undoneBy === turnId);
  }

  private placeFooter(turnId: string): void {
    const footer = this.footers.get(turnId);
    if (!footer) return;
    let last: number | undefined;
    for (const view of this.views.values()) {
      if (view.item.turnId !== turnId) continue;
      const ordinal = Number(view.element.dataset.ordinal);
      if (Number.isFinite(ordinal) && (last === undefined || ordinal > last)) last = ordinal;
    }
    if (last === undefined || footer.empty) {
      footer.element.remove();
      return;
    }
    footer.element.dataset.ordinal = String(last + FOOTER_OFFSET);
    this.insertByOrdinal(footer.element, last + FOOTER_OFFSET);
  }

  /** How an approval of this session's call ended, heard elsewhere (on a session above it). */
  noteOutcome(outcome: ApprovalOutcome): void {
    this.outcomes.set(outcome.itemId, outcome);
    this.showOutcome(this.views.get(outcome.itemId));
  }

  /** Renders pending deltas now. */
  flush(): void {
    for (const view of this.views.values()) view.flush();
    for (const child of this.children.values()) child.flush();
  }

  addChild(child: SessionView, anchor: number | undefined): void {
    this.children.set(child.sessionId, child);
    child.element.dataset.ordinal = String((anchor ?? this.lastOrdinal()) + NESTED_OFFSET);
    this.insertByOrdinal(child.element, Number(child.element.dataset.ordinal));
  }

  child(sessionId: string): SessionView | undefined {
    return this.children.get(sessionId);
  }

  private lastOrdinal(): number {
    let last = 0;
    for (const view of this.views.values()) {
      const ordinal = Number(view.element.dataset.ordinal);
      if (Number.isFinite(ordinal) && ordinal > last) last = ordinal;
    }
    return last;
  }

  private prepend(items: LoggedItem[], hasEarlier: boolean): void {
    const fragment = document.createDocumentFragment();
    for (const logged of items) if (!this.views.has(logged.item.id)) fragment.append(this.createSaved(logged));
    this.list.prepend(fragment);
    for (const turnId of this.footers.keys()) this.placeFooter(turnId); // turns whose items just came
    this.earlier.hidden = !hasEarlier;
    this.earlier.disabled = false;
  }

  private saved(ordinal: number, item: Item): void {
    const existing = this.views.get(item.id);
    if (existing) {
      existing.update(item);
      existing.element.dataset.ordinal = String(ordinal);
      delete existing.element.dataset.streaming;
      this.insertByOrdinal(existing.element, ordinal);
      this.linkResult(existing);
      return;
    }
    this.insertByOrdinal(this.createSaved({ ordinal, item }), ordinal);
  }

  private createSaved(logged: LoggedItem): HTMLElement {
    const view = this.createView(logged.item);
    view.element.dataset.ordinal = String(logged.ordinal);
    return view.element;
  }

  private createStreaming(item: Item): HTMLElement {
    const view = this.createView(item);
    view.element.dataset.streaming = "true";
    return view.element;
  }

  private createView(item: Item): ItemView {
    const view = new ItemView(item, this.context);
    this.views.set(item.id, view);
    this.linkResult(view);
    this.showOutcome(view);
    return view;
  }

  private showOutcome(view: ItemView | undefined): void {
    const outcome = view ? this.outcomes.get(view.item.id) : undefined;
    if (!view || !outcome) return;
    view.setApproval({ decision: outcome.decision, text: describeDecision(outcome.decision, outcome.by, this.context.clientId()) });
  }

  /** Tool calls show their result; a result shows itself only when its call is not on screen. */
  private linkResult(view: ItemView): void {
    const item = view.item;
    if (item.type === "toolCall" && view.callId) {
      this.calls.set(view.callId, view);
      const waiting = this.results.get(view.callId);
      if (waiting) {
        view.attachResult(waiting);
        this.views.get(waiting.id)?.element.classList.add("shown-in-call");
      }
    } else if (item.type === "toolResult" && item.toolResult) {
      const call = this.calls.get(item.toolResult.callId);
      this.results.set(item.toolResult.callId, item);
      if (call) {
        call.attachResult(item);
        view.element.classList.add("shown-in-call");
      }
    }
  }

  /** Puts a saved element where its ordinal says: before the first element with a greater ordinal,
   * else before the first streaming element, else last. Searches from the end (the usual case). */
  private insertByOrdinal(element: HTMLElement, ordinal: number): void {
    const children = this.list.children;
    let before: Element | null = null;
    for (let index = children.length - 1; index >= 0; index--) {
      const child = children[index] as HTMLElement;
      if (child === element) continue;
      if (child.dataset.streaming === "true") {
        before = child;
        continue;
      }
      const other = Number(child.dataset.ordinal);
      if (Number.isFinite(other) && other > ordinal) {
        before = child;
        continue;
      }
      break;
    }
    if (element.nextElementSibling === before && element.parentElement === this.list) return;
    this.list.insertBefore(element, before);
  }
}
