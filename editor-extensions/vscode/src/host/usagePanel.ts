// The usage panel: tokens by day and model, charted from `openvaala/query` on usage_by_model_day.
import * as vscode from "vscode";
import type { OpenvaalaClient } from "../client/openvaalaClient";
import { toProtocolError } from "../protocol/errors";
import type { UsageHostMessage, UsageViewMessage } from "../shared/messages";
import { USAGE_SQL, parseUsage, sinceDay } from "../usage/usageData";
import { webviewHtml } from "./webviewHtml";

export class UsagePanel {
  private static current: UsagePanel | undefined;
  private days = 30;

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
      const since = sinceDay(this.days);
      const result = await client.query(USAGE_SQL, [since]);
      this.post({ type: "usage", rows: parseUsage(result), since, days: this.days, truncated: result.truncated });
    } catch (error) {
      this.post({ type: "usageError", message: `Could not read the usage: ${toProtocolError(error).message}` });
    }
  }
}
