// The conversation list: search, the archived filter, running indicators, per-entry actions.
import type { ConversationListEntry } from "../../protocol/generated";
import type { ListFilter, ViewMessage } from "../../shared/messages";
import { clear, h, icon, relativeTime } from "../dom";

export class ListView {
  readonly element: HTMLElement;
  private readonly entries: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly archived: HTMLInputElement;
  private readonly more: HTMLButtonElement;
  private running = new Set<string>();
  private nextCursor: string | undefined;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private shown: ConversationListEntry[] = [];

  constructor(
    private readonly post: (message: ViewMessage) => void,
    private readonly supports: (method: string) => boolean,
    sandboxBadge: HTMLElement,
  ) {
    this.search = h("input", { class: "search", type: "search", placeholder: "Search conversations", "aria-label": "Search conversations" });
    this.search.addEventListener("input", () => {
      if (this.searchTimer !== undefined) clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.requestList(), 200);
    });
    this.archived = h("input", { type: "checkbox", class: "archived-toggle" });
    this.archived.addEventListener("change", () => this.requestList());
    this.entries = h("ul", { class: "conversation-list", role: "list" });
    this.more = h("button", { class: "link-button", hidden: true }, "Load more");
    this.more.addEventListener("click", () => {
      if (this.nextCursor) this.post({ type: "list", filter: this.filter(), cursor: this.nextCursor });
    });
    this.element = h(
      "section",
      { class: "list-screen" },
      h(
        "div",
        { class: "list-toolbar" },
        this.search,
        h("label", { class: "archived-label", title: "Show archived conversations" }, this.archived, "Archived"),
        sandboxBadge,
        h("button", { class: "primary", "data-action": "new", title: "New conversation", onclick: () => this.post({ type: "create" }) }, icon("add"), " New"),
      ),
      this.entries,
      this.more,
    );
  }

  filter(): ListFilter {
    return { query: this.search.value, archived: this.archived.checked };
  }

  requestList(): void {
    this.post({ type: "list", filter: this.filter() });
  }

  show(entries: ConversationListEntry[], running: string[], filter: ListFilter, nextCursor: string | undefined, appendPage: boolean): void {
    this.running = new Set(running);
    if (document.activeElement !== this.search) this.search.value = filter.query;
    this.archived.checked = filter.archived;
    this.shown = appendPage ? [...this.shown, ...entries] : entries;
    this.nextCursor = nextCursor;
    this.more.hidden = nextCursor === undefined;
    this.render();
  }

  setRunning(ids: string[]): void {
    this.running = new Set(ids);
    for (const row of Array.from(this.entries.children) as HTMLElement[]) {
      row.classList.toggle("running", this.running.has(row.dataset.conversationId ?? ""));
    }
  }

  private render(): void {
    clear(this.entries);
    if (this.shown.length === 0) {
      this.entries.append(
        h("li", { class: "empty" }, this.search.value ? "No conversation matches." : this.archived.checked ? "No archived conversations." : "No conversations yet. Start one with New."),
      );
      return;
    }
    for (const entry of this.shown) this.entries.append(this.row(entry));
  }

  private row(entry: ConversationListEntry): HTMLElement {
    const conversation = entry.conversation;
    const id = conversation.id;
    const running = this.running.has(id) || entry.running;
    const actions: HTMLElement[] = [];
    if (this.supports("openvaala/setConversationTitle")) {
      actions.push(h("button", { class: "icon-button", title: "Rename", "data-action": "rename", onclick: (e: Event) => { e.stopPropagation(); this.post({ type: "rename", conversationId: id }); } }, icon("edit")));
    }
    if (this.supports("openvaala/setConversationArchived")) {
      actions.push(
        h("button", {
          class: "icon-button",
          title: conversation.archived ? "Unarchive" : "Archive",
          "data-action": "archive",
          onclick: (e: Event) => {
            e.stopPropagation();
            this.post({ type: "archive", conversationId: id, archived: !conversation.archived });
          },
        }, icon(conversation.archived ? "inbox" : "archive")),
      );
    }
    if (this.supports("openvaala/deleteConversation")) {
      actions.push(h("button", { class: "icon-button danger", title: "Delete", "data-action": "delete", onclick: (e: Event) => { e.stopPropagation(); this.post({ type: "delete", conversationId: id }); } }, icon("trash")));
    }
    const row = h(
      "li",
      {
        class: `conversation-row${running ? " running" : ""}`,
        "data-conversation-id": id,
        tabindex: 0,
        role: "button",
        onclick: () => this.post({ type: "open", conversationId: id }),
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === "Enter") this.post({ type: "open", conversationId: id });
        },
      },
      h("span", { class: "running-dot", title: "A turn is running" }),
      h(
        "div",
        { class: "conversation-text" },
        h("div", { class: "conversation-title" }, conversation.title || "Untitled conversation"),
        h("div", { class: "conversation-meta" }, relativeTime(entry.lastActivityAt ?? conversation.updatedAt), conversation.agentName !== "default" ? ` · ${conversation.agentName}` : "", conversation.forkedFrom ? " · fork" : ""),
      ),
      h("div", { class: "row-actions" }, ...actions),
    );
    return row;
  }
}
