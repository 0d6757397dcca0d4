// What the chat needs from the editor itself: the diff editor on two virtual documents, opening a
// file at a line, a file's text (the editor's, unsaved changes included), the folder's files for the
// @-mention completion, and the active editor's selection or file as context.
import * as path from "node:path";
import * as vscode from "vscode";
import type { DiffView } from "../chat/controller";
import type { ContextRef } from "../shared/messages";

export const DIFF_SCHEME = "openvaala-diff";

/** The before and after texts of the diffs opened, as read-only virtual documents. */
export class DiffDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private next = 0;
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  /** A URI whose document holds `text`; its path ends like `file`, so the editor picks the language. */
  uriFor(file: string, side: "before" | "after", text: string): vscode.Uri {
    const key = `${++this.next}-${side}`;
    this.texts.set(key, text);
    // keep the last 200 texts: a diff tab reopened later still has its text
    if (this.texts.size > 200) this.texts.delete(this.texts.keys().next().value as string);
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: file, query: key });
  }

  async show(diff: DiffView): Promise<void> {
    const before = this.uriFor(diff.path, "before", diff.before);
    const after = this.uriFor(diff.path, "after", diff.after);
    await vscode.commands.executeCommand("vscode.diff", before, after, diff.title, { preview: true });
    if (diff.note) void vscode.window.showInformationMessage(diff.note);
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}

function folderUri(folder: string | undefined): vscode.Uri | undefined {
  if (folder) return vscode.Uri.parse(folder);
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

/** An absolute path as is; a relative one inside the folder. */
export function resolveIn(folder: string | undefined, file: string): vscode.Uri {
  if (file.startsWith("file:")) return vscode.Uri.parse(file);
  if (path.isAbsolute(file)) return vscode.Uri.file(file);
  const base = folderUri(folder);
  return base ? vscode.Uri.joinPath(base, file) : vscode.Uri.file(path.resolve(file));
}

export async function openFileAt(folder: string | undefined, file: string, line?: number): Promise<void> {
  const uri = resolveIn(folder, file);
  try {
    await vscode.workspace.fs.stat(uri);
  } catch {
    void vscode.window.showWarningMessage(`openvaala: ${file} does not exist.`);
    return;
  }
  const position = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.window.showTextDocument(uri, {
    preview: true,
    ...(position ? { selection: new vscode.Range(position, position) } : {}),
  });
}

export async function readText(folder: string | undefined, file: string): Promise<string | undefined> {
  const uri = resolveIn(folder, file);
  const open = vscode.workspace.textDocuments.find((document) => document.uri.toString() === uri.toString());
  if (open) return open.getText();
  try {
    const bytes = await vscode.workspace.fs.readFile(uri);
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

const EXCLUDE = "{**/node_modules/**,**/.git/**,**/.venv/**,**/__pycache__/**,**/dist/**,**/out/**}";

export async function workspaceFiles(folder: string | undefined): Promise<string[]> {
  const base = folderUri(folder);
  if (!base) return [];
  const found = await vscode.workspace.findFiles(new vscode.RelativePattern(base, "**/*"), EXCLUDE, 20_000);
  return found.map((uri) => path.relative(base.fsPath, uri.fsPath).split(path.sep).join("/")).sort();
}

/** The active editor's selection (or, with none or `wholeFile`, its file) as context. */
export function activeContext(wholeFile: boolean): ContextRef | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return undefined;
  const document = editor.document;
  const shown = vscode.workspace.asRelativePath(document.uri, false);
  const ref: ContextRef = {
    path: shown,
    uri: document.uri.scheme === "file" ? document.uri.fsPath : document.uri.toString(),
    languageId: document.languageId,
  };
  const selection = editor.selection;
  if (wholeFile || selection.isEmpty) return { ...ref, text: document.getText() };
  // a selection that ends at the start of a line does not take that line
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line - 1 : selection.end.line;
  const range = new vscode.Range(selection.start.line, 0, endLine, document.lineAt(endLine).text.length);
  return { ...ref, startLine: selection.start.line + 1, endLine: endLine + 1, text: document.getText(range) };
}
