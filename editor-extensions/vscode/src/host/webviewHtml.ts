// The HTML shell of a webview: a strict Content-Security-Policy (scripts only from the bundled file,
// with a nonce; no inline script, no remote resource), the bundled CSS and script.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, script: string, style: string, title: string): string {
  const nonce = randomBytes(16).toString("base64");
  const scriptUri = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", script));
  const styleUri = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "media", style));
  const iconsUri = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", "codicon.css"));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${iconsUri.toString()}">
<link rel="stylesheet" href="${styleUri.toString()}">
<title>${title}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${scriptUri.toString()}"></script>
</body>
</html>`;
}
