// The chat view in the openvaala activity-bar container: a webview whose logic is ChatController.
import * as vscode from "vscode";
import { ChatController, type ChatUi, type ClientProvider } from "../chat/controller";
import type { AgentInfo } from "../protocol/generated";
import { describeAgentPolicy } from "../shared/agents";
import type { ContextRef, HostCommand, HostMessage, ViewMessage } from "../shared/messages";
import { DiffDocuments, openFileAt, readText, workspaceFiles } from "./editorBridge";
import { webviewHtml } from "./webviewHtml";

export const CHAT_VIEW_ID = "openvaala.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  readonly controller: ChatController;
  private readonly diffs = new DiffDocuments();

  constructor(
    private readonly extensionUri: vscode.Uri,
    clients: ClientProvider,
    private readonly runCommand: (command: HostCommand) => void,
  ) {
    const ui: ChatUi = {
      post: (message) => this.post(message),
      confirm: async (message, confirmLabel) =>
        (await vscode.window.showWarningMessage(message, { modal: true }, confirmLabel)) === confirmLabel,
      input: (prompt, value) => Promise.resolve(vscode.window.showInputBox({ prompt, value })),
      pickAgent: async (agents: AgentInfo[]) => {
        const picked = await vscode.window.showQuickPick(
          agents.map((agent) => ({ label: agent.name, description: agent.description, detail: describeAgentPolicy(agent), agent })),
          { placeHolder: "Agent for the new conversation" },
        );
        return picked?.agent;
      },
      runCommand: (command) => this.runCommand(command),
      openLink: (href) => {
        if (/^(https?|mailto):/i.test(href)) void vscode.env.openExternal(vscode.Uri.parse(href));
      },
      showDiff: (diff) => this.diffs.show(diff),
      openFile: (folder, file, line) => openFileAt(folder, file, line),
      readFile: (folder, file) => readText(folder, file),
      workspaceFiles: (folder) => workspaceFiles(folder),
    };
    this.controller = new ChatController(ui, clients);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist"), vscode.Uri.joinPath(this.extensionUri, "media")],
    };
    view.webview.html = webviewHtml(view.webview, this.extensionUri, "chat.js", "chat.css", "openvaala");
    view.webview.onDidReceiveMessage((message: ViewMessage) => void this.controller.handle(message));
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
    });
  }

  private post(message: HostMessage): void {
    if (this.view) void this.view.webview.postMessage(message);
    // without a view the state lives in the controller and is replayed on `ready`
  }

  /** Shows the view and runs `message` as if the view had sent it. */
  async run(message: ViewMessage): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    await this.controller.handle(message);
  }

  focusInput(): void {
    this.post({ type: "focusInput" });
  }

  /** Shows the view and attaches context to the next message. */
  async addContext(context: ContextRef): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    this.post({ type: "addContext", context });
    this.post({ type: "focusInput" });
  }

  dispose(): void {
    this.diffs.dispose();
    this.controller.dispose();
  }
}
