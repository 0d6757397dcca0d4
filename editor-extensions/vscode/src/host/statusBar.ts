// The status bar item: the open conversation's context use (tokens / window), with its threshold.
import * as vscode from "vscode";
import type { ContextSummary } from "../chat/controller";

function tokens(value: number): string {
  return value < 1000 ? String(value) : `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`;
}

export class ContextStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("openvaala.context", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "openvaala context";
    this.item.command = "openvaala.focus";
  }

  update(summary: ContextSummary | undefined): void {
    const context = summary?.context;
    if (!summary || !context || context.window <= 0) {
      this.item.hide();
      return;
    }
    const share = Math.round((context.tokens / context.window) * 100);
    const estimated = context.source === "estimated" ? "~" : context.source === "unknown" ? "?" : "";
    this.item.text = `${summary.running ? "$(loading~spin)" : "$(comment-discussion)"} ${estimated}${tokens(context.tokens)}/${tokens(context.window)}`;
    const near = summary.thresholdTokens !== undefined && context.tokens >= summary.thresholdTokens * 0.9;
    this.item.backgroundColor = near ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.tooltip = new vscode.MarkdownString(
      `**${summary.conversationTitle || "openvaala"}**\n\n` +
        `Context: ${context.tokens.toLocaleString()} of ${context.window.toLocaleString()} tokens (${share}%, ${context.source})` +
        (summary.thresholdTokens !== undefined ? `\n\nCompacts at ${summary.thresholdTokens.toLocaleString()} tokens` : ""),
    );
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
