// The chat webview: the conversation list, or one open conversation with its input box. It renders
// what the extension host sends and posts back what the user asks; no protocol logic lives here.
import type { ApprovalOutcome, TimelineOp } from "../../client/timeline";
import type { Conversation, Session } from "../../protocol/generated";
import type { ConnectionStatus, FixAction, FolderInfo, HostMessage, ViewMessage } from "../../shared/messages";
import { clear, h, icon } from "../dom";
import { Composer } from "./composer";
import { ConversationHeader } from "./header";
import { ListView } from "./listView";
import { ApprovalPanel, PendingPanel } from "./panels";
import { SandboxBadge } from "./sandboxBadge";
import { markRunningTurn } from "./itemView";
import { SessionView } from "./sessionView";
import { markdown } from "./markdown";

const BOTTOM_SLACK = 40; // px: "at the bottom" for auto-scrolling
const USER_SCROLL_MS = 1000; // a scroll this soon after the user's wheel, touch, key or pointer is theirs

export class ChatApp {
  private readonly root: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly folderSelect: HTMLSelectElement;
  private readonly list: ListView;
  private readonly conversationScreen: HTMLElement;
  private readonly header: ConversationHeader;
  private readonly timeline: HTMLElement;
  private readonly notices: HTMLElement;
  private readonly pending: PendingPanel;
  private readonly approvals: ApprovalPanel;
  private readonly composer: Composer;
  private actions = new Set<string>();
  private main: SessionView | undefined;
  private mainSessionId = "";
  private readonly sessions = new Map<string, SessionView>();
  /** How sub-agents' approvals ended, heard on a session above theirs: for their calls' views,
   * which may reach the view only later. */
  private readonly subAgentOutcomes = new Map<string, ApprovalOutcome>();
  private conversation: Conversation | undefined;
  private stickToBottom = true;
  private running = false;
  private clientId: string | undefined;
  private activeTurnId: string | undefined;
  private readonly sandboxBadges: SandboxBadge[];
  private folder: string | undefined;

  constructor(
    root: HTMLElement,
    private readonly post: (message: ViewMessage) => void,
  ) {
    this.root = root;
    const supports = (method: string) => this.actions.has(method);
    this.banner = h("div", { class: "banner", hidden: true, role: "status" });
    this.folderSelect = h("select", { class: "folder-select", hidden: true, "aria-label": "Workspace folder" });
    this.folderSelect.addEventListener("change", () => this.post({ type: "selectFolder", folder: this.folderSelect.value }));
    this.sandboxBadges = [new SandboxBadge(post), new SandboxBadge(post)];
    this.list = new ListView(post, supports, this.sandboxBadges[0]!.element);
    this.header = new ConversationHeader(post, supports, this.sandboxBadges[1]!.element);
    this.timeline = h("div", { class: "timeline", role: "log", "aria-live": "polite" });
    // Following the bottom stops only when the user scrolls away from it (wheel, touch, keys, the
    // scroll bar), not when the browser moves it because a prompt took room or content was laid out.
    let userScrolled = 0;
    const byUser = () => (userScrolled = Date.now());
    for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) this.timeline.addEventListener(type, byUser, { passive: true });
    this.timeline.addEventListener("scroll", () => {
      const { scrollHeight, scrollTop, clientHeight } = this.timeline;
      if (scrollHeight - scrollTop - clientHeight < BOTTOM_SLACK) this.stickToBottom = true;
      else if (Date.now() - userScrolled < USER_SCROLL_MS) this.stickToBottom = false;
    });
    this.timeline.addEventListener("click", (event) => this.onLinkClick(event));
    // stay at the bottom when prompts and queued inputs take room from the timeline (content that
    // grows by itself, e.g. a fold the user opens, does not move the view)
    new ResizeObserver(() => this.keepAtBottom()).observe(this.timeline);
    this.notices = h("div", { class: "notices" });
    this.notices.addEventListener("click", (event) => this.onLinkClick(event));
    this.pending = new PendingPanel(post, supports);
    this.approvals = new ApprovalPanel(post, supports, {
      origin: (sessionId) => {
        if (sessionId === this.mainSessionId) return undefined;
        const agentName = this.sessions.get(sessionId)?.session.agentName;
        return agentName ? { agentName } : {};
      },
      reveal: (sessionId, itemId) => this.reveal(sessionId, itemId),
    });
    this.composer = new Composer({
      submit: (content, mode, context) => this.post({ type: "submit", content, mode, ...(context.length ? { context } : {}) }),
      interrupt: () => this.post({ type: "interrupt" }),
      mentionQuery: (requestId, query) => this.post({ type: "mentionQuery", requestId, query }),
    });
    this.conversationScreen = h(
      "section",
      { class: "conversation-screen", hidden: true },
      this.header.element,
      this.timeline,
      this.approvals.element,
      this.pending.element,
      this.composer.element,
    );
    clear(root);
    root.append(
      h("div", { class: "topbar" }, this.folderSelect),
      this.banner,
      this.notices,
      this.list.element,
      this.conversationScreen,
    );
  }

  receive(message: HostMessage): void {
    switch (message.type) {
      case "init":
        this.folder = message.folder;
        this.actions = new Set(message.actions);
        this.showFolders(message.folders, message.folder);
        this.showConnection(message.connection);
        return;
      case "connection":
        this.folder = message.folder;
        this.actions = new Set(message.actions);
        this.showConnection(message.connection);
        return;
      case "conversations":
        this.list.show(message.entries, message.running, message.filter, message.nextCursor, message.append);
        if (!this.conversation) this.showList();
        return;
      case "running":
        this.list.setRunning(message.conversationIds);
        return;
      case "opened":
        this.open(message.conversation, message.mainSessionId);
        return;
      case "closed":
        this.conversation = undefined;
        this.showList();
        return;
      case "conversation":
        if (this.conversation?.id === message.conversation.id) {
          this.conversation = message.conversation;
          this.header.show(message.conversation, this.mainSessionId);
        }
        return;
      case "session":
        this.showSession(message.session, message.snapshot, message.anchor);
        return;
      case "ops":
        this.applyOps(message.sessionId, message.ops);
        return;
      case "sync":
        if (message.sessionId !== this.mainSessionId) return;
        if (message.state.state === "resyncing") this.header.setState("reconnecting…", true);
        else if (message.state.state === "closed") this.header.setState(`disconnected: ${message.state.reason.message}`, false);
        else this.updateRunning(this.running);
        return;
      case "contextUsage":
        if (message.sessionId === this.mainSessionId) this.header.setUsage(message.usage);
        return;
      case "models":
        this.header.setModels(message.models, message.agentDefault);
        return;
      case "sessionModel":
        if (message.sessionId === this.mainSessionId) this.header.setSessionModel(message.model);
        return;
      case "composer":
        this.composer.restore(message.text);
        return;
      case "approvalAnswer":
        this.approvals.answered(message.itemId, message.outcome, message.message);
        if (message.outcome === "gone") setTimeout(() => this.approvals.remove(message.itemId), 4000);
        return;
      case "notice":
        this.notice(message.level, message.message, message.fix);
        return;
      case "focusInput":
        this.composer.focus();
        return;
      case "turnInfo": {
        const view = this.sessions.get(message.sessionId);
        if (!view) return;
        for (const info of message.turns) view.setTurnInfo(info, this.post, () => this.folderRoot());
        return;
      }
      case "revertConflict":
        this.main?.footer(message.turnId)?.refused(message.message, message.files, message.redo);
        return;
      case "revertDone":
        this.main?.footer(message.turnId)?.done();
        return;
      case "mentions":
        this.composer.showMentions(message.requestId, message.items);
        return;
      case "addContext":
        this.composer.addContext(message.context);
        return;
      default:
        return;
    }
  }

  /** The workspace folder's path (files under it are shown relative to it). */
  private folderRoot(): string | undefined {
    if (!this.folder?.startsWith("file://")) return undefined;
    try {
      return decodeURIComponent(new URL(this.folder).pathname).replace(/\/$/, "");
    } catch {
      return undefined;
    }
  }

  /** Renders every pending delta now (for tests that take a screenshot mid-stream). */
  flush(): void {
    for (const view of this.sessions.values()) view.flush();
  }

  private showFolders(folders: FolderInfo[], selected: string | undefined): void {
    clear(this.folderSelect);
    for (const folder of folders) this.folderSelect.append(h("option", { value: folder.key, selected: folder.key === selected }, folder.name));
    this.folderSelect.hidden = folders.length < 2;
  }

  private showConnection(status: ConnectionStatus): void {
    if (status.state === "ready") this.clientId = status.clientId;
    for (const badge of this.sandboxBadges) badge.show(status.state === "ready" ? status.sandbox : undefined, status.state === "ready");
    clear(this.banner);
    if (status.state === "ready" || status.state === "starting") {
      this.banner.hidden = status.state === "ready";
      if (status.state === "starting") this.banner.append("Starting openvaala…");
      return;
    }
    this.banner.hidden = false;
    this.banner.className = `banner ${status.state}`;
    this.banner.append(h("span", {}, status.message));
    if (status.state === "failed" && status.fix) {
      const fix = status.fix;
      this.banner.append(h("button", { class: "primary", onclick: () => this.post({ type: "command", command: fix.command }) }, fix.label));
    }
  }

  /** A banner above the view. The same one (level and words) is never shown twice: it is brought
   * back to the end instead. Its words are markdown (inline: `code`, emphasis, links). */
  private notice(level: "info" | "warning" | "error", text: string, fix?: FixAction): void {
    const key = `${level}\u0000${text}`;
    for (const existing of Array.from(this.notices.children) as HTMLElement[]) {
      if (existing.dataset.key !== key) continue;
      this.notices.append(existing);
      existing.classList.remove("again");
      void existing.offsetWidth;
      existing.classList.add("again");
      return;
    }
    const close = h("button", { class: "icon-button", title: "Dismiss", "aria-label": "Dismiss" }, icon("close"));
    const words = h("span", { class: "notice-text" });
    words.innerHTML = markdown.renderInline(text);
    const element = h(
      "div",
      { class: `notice ${level}`, role: level === "error" ? "alert" : "status" },
      words,
      fix ? h("button", { class: "primary", onclick: () => this.post({ type: "command", command: fix.command }) }, fix.label) : null,
      close,
    );
    element.dataset.key = key;
    close.addEventListener("click", () => element.remove());
    this.notices.append(element);
    while (this.notices.children.length > 3) this.notices.firstElementChild?.remove();
    if (level === "info") setTimeout(() => element.remove(), 6000);
  }

  private showList(): void {
    this.list.element.hidden = false;
    this.conversationScreen.hidden = true;
  }

  private open(conversation: Conversation, mainSessionId: string): void {
    const same = this.conversation?.id === conversation.id;
    this.conversation = conversation;
    this.mainSessionId = mainSessionId;
    this.header.show(conversation, mainSessionId);
    if (!same) {
      clear(this.timeline);
      this.sessions.clear();
      this.subAgentOutcomes.clear();
      this.main = undefined;
      this.pending.reset([]);
      this.approvals.reset([]);
      this.stickToBottom = true;
    }
    this.list.element.hidden = true;
    this.conversationScreen.hidden = false;
    this.composer.focus();
  }

  private showSession(session: Session, snapshot: Parameters<SessionView["renderSnapshot"]>[0], anchor: number | undefined): void {
    let view = this.sessions.get(session.id);
    if (!view) {
      const parent = session.parentSessionId ? this.sessions.get(session.parentSessionId) : undefined;
      view = new SessionView(
        session,
        {
          post: this.post,
          supports: (method) => this.actions.has(method),
          clientId: () => this.clientId,
          activeTurnId: () => this.activeTurnId,
        },
        { other: (op) => this.onSessionOp(session.id, op), grew: () => this.keepAtBottom() },
        parent !== undefined,
      );
      this.sessions.set(session.id, view);
      for (const outcome of this.subAgentOutcomes.values()) if (outcome.sessionId === session.id) view.noteOutcome(outcome);
      if (parent) parent.addChild(view, anchor);
      else if (session.id === this.mainSessionId || !this.main) {
        this.main = view;
        this.timeline.append(view.element);
      } else {
        this.main.addChild(view, anchor);
      }
    }
    view.renderSnapshot(snapshot);
    for (const outcome of snapshot.outcomes) if (outcome.sessionId !== session.id) this.noteSubAgentOutcome(outcome);
    if (session.id === this.mainSessionId) {
      this.pending.reset(snapshot.pending);
      this.approvals.reset(snapshot.approvals);
      this.header.setSessionModel(session.model.model);
      this.header.setContext(snapshot.status.context);
      this.setActiveTurn(snapshot.status.activeTurnId);
      this.updateRunning(snapshot.status.state === "running" || snapshot.status.state === "compacting");
    } else {
      for (const approval of snapshot.approvals) this.approvals.add(approval);
    }
    this.approvals.refreshOrigins(); // a sub-agent's prompt may have come before its session
    this.keepAtBottom(true);
  }

  /** A sub-agent's approval ended, as heard on a session above it: its call says who decided. */
  private noteSubAgentOutcome(outcome: ApprovalOutcome): void {
    this.subAgentOutcomes.set(outcome.itemId, outcome);
    this.sessions.get(outcome.sessionId)?.noteOutcome(outcome);
  }

  /** Shows a sub-agent's waiting call: its session unfolded, the call in view. */
  private reveal(sessionId: string, itemId: string): void {
    const view = this.sessions.get(sessionId);
    if (!view) return;
    for (let element: HTMLElement | null = view.element; element && element !== this.timeline; element = element.parentElement) {
      if (element instanceof HTMLDetailsElement) element.open = true;
    }
    const call = view.element.querySelector<HTMLElement>(`[data-item-id="${CSS.escape(itemId)}"]`) ?? view.element;
    this.stickToBottom = false;
    call.scrollIntoView({ block: "center" });
  }

  private applyOps(sessionId: string, ops: TimelineOp[]): void {
    const view = this.sessions.get(sessionId);
    if (!view) return;
    for (const op of ops) view.apply(op);
  }

  /** Ops the timeline does not draw itself. */
  private onSessionOp(sessionId: string, op: TimelineOp): void {
    const main = sessionId === this.mainSessionId;
    switch (op.op) {
      case "pendingAdded":
        if (main) this.pending.add(op.input);
        return;
      case "pendingRemoved":
        if (main) this.pending.remove(op.itemId);
        return;
      case "approval":
        this.approvals.add(op.approval);
        return;
      case "approvalClosed":
        this.approvals.remove(op.itemId);
        if (op.outcome && op.outcome.sessionId !== sessionId) this.noteSubAgentOutcome(op.outcome);
        return;
      case "status":
        if (!main) return;
        this.header.setContext(op.status.context);
        this.setActiveTurn(op.status.activeTurnId);
        this.updateRunning(op.status.state === "running" || op.status.state === "compacting", op.status.compacting === true);
        return;
      case "turn":
        if (main && op.phase === "completed" && op.turn.status === "failed" && op.turn.error) {
          this.notice("error", `The turn failed: ${op.turn.error.message}`);
        }
        return;
      case "error":
        this.notice("error", op.error.message);
        return;
      case "compaction":
        if (main && op.phase === "completed" && op.before && op.after) {
          this.notice("info", `Context compacted: ${op.before.tokens} → ${op.after.tokens} tokens.`);
        }
        return;
      default:
        return;
    }
  }

  private setActiveTurn(turnId: string | undefined): void {
    if (turnId === this.activeTurnId) return;
    this.activeTurnId = turnId;
    markRunningTurn(this.timeline, turnId);
  }

  private updateRunning(running: boolean, compacting = false): void {
    this.running = running;
    const canSteer = this.actions.has("openvaala/steerInput");
    this.composer.setRunning(running, canSteer);
    this.pending.setRunning(running);
    this.header.setState(compacting ? "compacting…" : running ? "running…" : "", running);
  }

  private keepAtBottom(force = false): void {
    if (!force && !this.stickToBottom) return;
    requestAnimationFrame(() => {
      this.timeline.scrollTop = this.timeline.scrollHeight;
    });
  }

  private onLinkClick(event: Event): void {
    const target = event.target as HTMLElement | null;
    // a file named in the chat (`src/a.ts:12` in an answer, a tool's path, a context chip) opens there
    const file = target?.closest<HTMLElement>(".file-link");
    if (file?.dataset.path) {
      event.preventDefault();
      const line = Number(file.dataset.line);
      this.post({ type: "openFile", path: file.dataset.path, ...(line > 0 ? { line } : {}) });
      return;
    }
    const link = target?.closest("a");
    if (!link) return;
    event.preventDefault();
    const href = link.getAttribute("href");
    if (href) this.post({ type: "openLink", href });
  }
}
