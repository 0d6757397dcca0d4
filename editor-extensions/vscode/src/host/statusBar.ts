// The status bar item: the open conversation's context use (tokens / window), with its threshold.
import * as vscode from "vscode";
import type { ContextSummary } from "../chat/controller";
import { sandboxSummary } from "../shared/status";

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
    const tooltip = new vscode.MarkdownString();
    tooltip.appendMarkdown("**").appendText(summary.conversationTitle || "openvaala").appendMarkdown("**\n\n");
    tooltip.appendText(`Context: ${context.tokens.toLocaleString()} of ${context.window.toLocaleString()} tokens (${share}%, ${context.source})`);
    if (summary.thresholdTokens !== undefined) tooltip.appendMarkdown("\n\n").appendText(`Compacts at ${summary.thresholdTokens.toLocaleString()} tokens`);
    if (summary.sandbox) {
      const sandbox = sandboxSummary(summary.sandbox);
      tooltip.appendMarkdown("\n\n").appendText(`${sandbox.label}: ${sandbox.detail}`);
    }
    this.item.tooltip = tooltip;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
