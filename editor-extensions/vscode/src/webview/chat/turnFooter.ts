// Under a turn's last item: how it ended when that needs saying (a runtime restart cut it), the files
// it changed ("3 files changed +12 −4", each opening the diff editor), Undo turn / Redo, and an undo
// the runtime refused because files changed since, in its words, with "Revert anyway".
import type { TurnFile, TurnInfo, ViewMessage } from "../../shared/messages";
import { filesSummary, reasonText } from "../../shared/turns";
import { clear, h, icon } from "../dom";

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** A path inside the workspace folder relative to it; any other as is. */
function relative(path: string, root: string | undefined): string {
  if (root && path.startsWith(`${root}/`)) return path.slice(root.length + 1);
  return path;
}

function dirName(path: string, root: string | undefined): string {
  const shown = relative(path, root);
  return shown.includes("/") ? shown.slice(0, shown.lastIndexOf("/")) : "";
}

const KIND_LABEL: Record<string, string> = { add: "A", update: "M", delete: "D", move: "R" };

export class TurnFooter {
  readonly element: HTMLElement;
  private info: TurnInfo;
  private conflict: { message: string; files: TurnFile[]; redo: boolean } | undefined;
  private busy = false;

  constructor(
    info: TurnInfo,
    private readonly post: (message: ViewMessage) => void,
    private readonly supports: (method: string) => boolean,
    private readonly root: () => string | undefined,
  ) {
    this.info = info;
    this.element = h("div", { class: "turn-footer", "data-turn-id": info.turnId });
    this.render();
  }

  get turnId(): string {
    return this.info.turnId;
  }

  /** Whether there is anything to show. */
  get empty(): boolean {
    return !reasonText(this.info) && !(this.info.files && this.info.files.length > 0);
  }

  update(info: TurnInfo): void {
    const merged: TurnInfo = { ...this.info, ...info };
    if (info.undoneBy === "") delete merged.undoneBy;
    const undoChanged = merged.undoneBy !== this.info.undoneBy;
    this.info = merged;
    if (undoChanged) {
      // the undo (or redo) went through: its answer may name the revert, not this turn
      this.conflict = undefined;
      this.busy = false;
    }
    this.render();
  }

  /** The runtime refused the undo (or redo): files changed since. */
  refused(message: string, files: TurnFile[], redo: boolean): void {
    this.busy = false;
    this.conflict = { message, files, redo };
    this.render();
    this.element.querySelector(".revert-conflict")?.scrollIntoView({ block: "nearest" });
  }

  done(): void {
    this.busy = false;
    this.conflict = undefined;
    this.render();
  }

  private send(force: boolean): void {
    const redo = this.info.undoneBy !== undefined;
    const turnId = redo ? (this.info.undoneBy as string) : this.info.turnId;
    this.busy = true;
    this.render();
    this.post({ type: "revertTurn", turnId, ...(force ? { force: true } : {}), ...(redo ? { redo: true } : {}) });
  }

  private render(): void {
    const element = this.element;
    clear(element);
    if (this.info.undoneBy) element.dataset.undoneBy = this.info.undoneBy;
    else delete element.dataset.undoneBy;
    const reason = reasonText(this.info);
    if (reason) {
      element.append(h("div", { class: `turn-reason reason-${this.info.reason ?? ""}`, role: "note" }, icon("debug-disconnect"), h("span", {}, reason)));
    }
    const files = this.info.files ?? [];
    element.hidden = this.empty;
    if (files.length === 0) return;
    const root = this.root();
    const undone = this.info.undoneBy !== undefined;
    const canRevert = this.supports("openvaala/revertTurn");
    const list = h(
      "ul",
      { class: "turn-files-list" },
      ...files.map((file) =>
        h(
          "li",
          { class: `turn-file kind-${file.kind}` },
          h(
            "button",
            {
              class: "link-button turn-file-open",
              title: file.binary ? `${file.path} (binary)` : `Open the diff of ${file.path}`,
              "data-path": file.path,
              disabled: !this.supports("openvaala/getTurnDiff"),
              onclick: () => this.post({ type: "openDiff", turnId: this.info.turnId, path: file.path }),
            },
            h("span", { class: `file-kind kind-${file.kind}`, title: file.kind }, KIND_LABEL[file.kind] ?? "?"),
            h("span", { class: "file-name" }, baseName(file.path)),
            h("span", { class: "file-dir" }, file.movedFrom ? `← ${baseName(file.movedFrom)}` : dirName(file.path, root)),
          ),
          h("span", { class: "file-counts" }, file.binary ? h("span", { class: "muted" }, "binary") : null, h("span", { class: "additions" }, `+${file.additions}`), " ", h("span", { class: "deletions" }, `−${file.deletions}`)),
        ),
      ),
    );
    const actions = h("span", { class: "turn-files-actions" });
    if (canRevert) {
      actions.append(
        h(
          "button",
          {
            class: "turn-revert",
            "data-action": undone ? "redo" : "undo",
            disabled: this.busy || this.info.status === "running",
            title: this.info.status === "running"
              ? "Undo this turn once it has ended"
              : undone
                ? "Put back what the undo took away"
                : "Put the workspace back as it was before this turn (and every later turn)",
            onclick: () => this.send(false),
          },
          icon(undone ? "redo" : "discard"),
          undone ? " Redo" : " Undo turn",
        ),
      );
    }
    const head = h(
      "div",
      { class: "turn-files-head" },
      h("span", { class: "turn-files-summary" }, icon("diff"), " ", filesSummary(files)),
      undone ? h("span", { class: "badge undone" }, "undone") : null,
      this.info.complete === false ? h("span", { class: "badge", title: "The checkpoints left files out (too large or too many)" }, "incomplete") : null,
      h("span", { class: "spacer" }),
      actions,
    );
    const box = h("div", { class: `turn-files${undone ? " undone" : ""}` }, head, list);
    if (this.conflict) {
      const conflict = this.conflict;
      box.append(
        h(
          "div",
          { class: "revert-conflict", role: "alert" },
          h("div", { class: "conflict-title" }, icon("warning"), conflict.redo ? " Redo refused" : " Undo refused"),
          h("div", { class: "conflict-message" }, conflict.message),
          conflict.files.length
            ? h("ul", { class: "conflict-files" }, ...conflict.files.map((file) => h("li", {}, h("button", { class: "link-button", "data-path": file.path, title: file.path, onclick: () => this.post({ type: "openFile", path: file.path }) }, relative(file.path, root)))))
            : null,
          h(
            "div",
            { class: "approval-buttons" },
            h("button", { class: "danger", "data-action": "revert-force", disabled: this.busy, title: "Overwrite the files changed since", onclick: () => this.send(true) }, "Revert anyway"),
            h("button", { "data-action": "revert-cancel", disabled: this.busy, onclick: () => this.done() }, "Keep my changes"),
          ),
        ),
      );
    }
    element.append(box);
  }
}
