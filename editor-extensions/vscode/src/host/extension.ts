// Activation: the per-folder connections, the chat view, the status bar item, the usage panel and
// the commands.
import * as vscode from "vscode";
import type { HostCommand, ViewMessage } from "../shared/messages";
import { CHAT_VIEW_ID, ChatViewProvider } from "./chatView";
import { ServerConnections, folderKey } from "./connections";
import { statusLines } from "../shared/status";
import { cliBeside } from "./serverCommand";
import { activeContext } from "./editorBridge";
import { ContextStatusBar } from "./statusBar";
import { UsagePanel } from "./usagePanel";

function quoteForShell(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("openvaala", { log: true });
  const connections = new ServerConnections(output);
  const statusBar = new ContextStatusBar();

  const currentFolder = (): vscode.WorkspaceFolder | undefined => {
    const key = chat.controller.folderKey;
    const folders = vscode.workspace.workspaceFolders ?? [];
    return folders.find((folder) => folderKey(folder) === key) ?? folders[0];
  };

  const runSetup = (): void => {
    const folder = currentFolder();
    let cli = "openvaala";
    try {
      if (folder) cli = cliBeside(connections.serverFor(folder));
    } catch {
      // no server found: the terminal then says that `openvaala` is missing too
    }
    const environment = vscode.workspace.getConfiguration("openvaala", folder?.uri).get<Record<string, string>>("environment", {});
    const terminal = vscode.window.createTerminal({
      name: "openvaala setup",
      ...(folder ? { cwd: folder.uri } : {}),
      env: environment,
    });
    terminal.show();
    terminal.sendText(`${quoteForShell(cli)} setup`);
  };

  const runHostCommand = (command: HostCommand): void => {
    switch (command) {
      case "setup":
        runSetup();
        return;
      case "usage":
        void vscode.commands.executeCommand("openvaala.showUsage");
        return;
      case "log":
        output.show();
        return;
      case "restart":
        void vscode.commands.executeCommand("openvaala.restartServer");
        return;
      case "settings":
        void vscode.commands.executeCommand("workbench.action.openSettings", "openvaala.serverCommand");
        return;
      case "status":
        void vscode.commands.executeCommand("openvaala.showStatus");
        return;
    }
  };

  const chat = new ChatViewProvider(context.extensionUri, connections, runHostCommand);
  chat.controller.onContext((summary) => statusBar.update(summary));

  const viewCommand = (name: string, message: () => ViewMessage | undefined) =>
    vscode.commands.registerCommand(name, async () => {
      const next = message();
      if (next) await chat.run(next);
    });
  const openId = (): string | undefined => {
    const id = chat.controller.openConversation?.id;
    if (!id) void vscode.window.showInformationMessage("Open an openvaala conversation first.");
    return id;
  };

  context.subscriptions.push(
    output,
    statusBar,
    chat,
    { dispose: () => void connections.dispose() },
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("openvaala.focus", async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      chat.focusInput();
    }),
    viewCommand("openvaala.newConversation", () => ({ type: "create" })),
    viewCommand("openvaala.showConversations", () => ({ type: "back" })),
    viewCommand("openvaala.interrupt", () => (openId() ? { type: "interrupt" } : undefined)),
    viewCommand("openvaala.compact", () => (openId() ? { type: "compact" } : undefined)),
    viewCommand("openvaala.renameConversation", () => {
      const id = openId();
      return id ? { type: "rename", conversationId: id } : undefined;
    }),
    viewCommand("openvaala.archiveConversation", () => {
      const open = chat.controller.openConversation;
      if (!open) {
        openId();
        return undefined;
      }
      return { type: "archive", conversationId: open.id, archived: !open.conversation.archived };
    }),
    viewCommand("openvaala.deleteConversation", () => {
      const id = openId();
      return id ? { type: "delete", conversationId: id } : undefined;
    }),
    vscode.commands.registerCommand("openvaala.selectModel", async () => {
      const open = chat.controller.openConversation;
      const folder = currentFolder();
      const main = open?.mainSession;
      if (!open || !folder || !main) {
        void vscode.window.showInformationMessage("Open an openvaala conversation first.");
        return;
      }
      const client = await connections.client(folderKey(folder));
      const list = await client.models(open.conversation.agentName);
      const current = main.session.model.model;
      const picked = await vscode.window.showQuickPick(
        list.models.map((model) => ({
          label: model.displayName ?? `${model.ref.provider}/${model.ref.name}`,
          description: `${model.ref.provider}/${model.ref.name} · ${model.contextWindow.toLocaleString()} tokens`,
          picked: current?.provider === model.ref.provider && current.name === model.ref.name,
          model,
        })),
        { placeHolder: "Model for this conversation's session" },
      );
      if (picked) await chat.run({ type: "setModel", sessionId: main.session.id, model: picked.model.ref });
    }),
    vscode.commands.registerCommand("openvaala.showUsage", () => {
      const folder = currentFolder();
      if (!folder) {
        void vscode.window.showInformationMessage("Open a folder to see openvaala's usage.");
        return;
      }
      UsagePanel.show(context.extensionUri, () => connections.client(folderKey(folder)));
    }),
    vscode.commands.registerCommand("openvaala.restartServer", async () => {
      const folder = currentFolder();
      if (folder) await connections.restart(folderKey(folder));
    }),
    vscode.commands.registerCommand("openvaala.setup", runSetup),
    vscode.commands.registerCommand("openvaala.showStatus", async () => {
      const folder = currentFolder();
      if (!folder) {
        void vscode.window.showInformationMessage("Open a folder to use openvaala.");
        return;
      }
      const key = folderKey(folder);
      const client = await connections.client(key).catch(() => undefined); // a failure is part of the report
      const report = connections.report(key);
      if (client?.supports("openvaala/listAgents")) {
        try {
          report.agents = await client.agents();
        } catch {
          // the agents are extra; the connection's state is the report
        }
      }
      const picked = await vscode.window.showInformationMessage(
        `openvaala: ${report.status.state === "ready" ? "connected" : report.status.state}`,
        { modal: true, detail: statusLines(report).join("\n\n") },
        "Show Log",
        "Restart openvaala-lsp",
      );
      if (picked === "Show Log") output.show();
      if (picked === "Restart openvaala-lsp") await connections.restart(key);
    }),
    vscode.commands.registerCommand("openvaala.showLog", () => output.show()),
    vscode.commands.registerCommand("openvaala.addSelection", async () => {
      const context = activeContext(false);
      if (!context) {
        void vscode.window.showInformationMessage("openvaala: open a file in an editor first.");
        return;
      }
      await chat.addContext(context);
    }),
    vscode.commands.registerCommand("openvaala.addFile", async () => {
      const context = activeContext(true);
      if (!context) {
        void vscode.window.showInformationMessage("openvaala: open a file in an editor first.");
        return;
      }
      await chat.addContext(context);
    }),
  );
}

export function deactivate(): void {
  // everything is disposed through context.subscriptions
}
