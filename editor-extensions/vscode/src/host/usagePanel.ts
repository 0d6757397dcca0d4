// The usage panel: tokens and cost by day and model, charted from `openvaala/query` on usage_daily.
import * as vscode from "vscode";
import type { OpenvaalaClient } from "../client/openvaalaClient";
import { toProtocolError } from "../protocol/errors";
import type { UsageHostMessage, UsageViewMessage } from "../shared/messages";
import { loadUsage } from "../usage/usageData";
import { webviewHtml } from "./webviewHtml";

export class UsagePanel {
  private static current: UsagePanel | undefined;
  private days = 30;
  private requests = 0;

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly client: () => Promise<OpenvaalaClient>,
  ) {
    panel.onDidDispose(() => {
      if (UsagePanel.current === this) UsagePanel.current = undefined;
    });
    panel.webview.onDidReceiveMessage((message: UsageViewMessage) => {
      if (message.type === "range") this.days = message.days;
      void this.load();
    });
  }

  static show(extensionUri: vscode.Uri, client: () => Promise<OpenvaalaClient>): void {
    if (UsagePanel.current) {
      UsagePanel.current.panel.reveal();
      void UsagePanel.current.load();
      return;
    }
    const panel = vscode.window.createWebviewPanel("openvaala.usage", "openvaala usage", vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, "dist"), vscode.Uri.joinPath(extensionUri, "media")],
    });
    panel.webview.html = webviewHtml(panel.webview, extensionUri, "usage.js", "usage.css", "openvaala usage");
    UsagePanel.current = new UsagePanel(panel, client);
  }

  private post(message: UsageHostMessage): void {
    void this.panel.webview.postMessage(message);
  }

  private async load(): Promise<void> {
    try {
      const client = await this.client();
      if (!client.supports("openvaala/query")) {
        this.post({ type: "usageError", message: "This openvaala server cannot answer queries (no openvaala/query)." });
        return;
      }
      const request = ++this.requests;
      const usage = await loadUsage((sql, parameters) => client.query(sql, parameters), this.days);
      if (request !== this.requests) return; // a later range was asked for meanwhile
      this.post({ type: "usage", ...usage });
    } catch (error) {
      this.post({ type: "usageError", message: `Could not read the usage: ${toProtocolError(error).message}` });
    }
  }
}
