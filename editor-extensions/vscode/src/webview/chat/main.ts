// Entry point of the chat webview.
import type { HostMessage, ViewMessage } from "../../shared/messages";
import { ChatApp } from "./app";

interface VsCodeApi {
  postMessage(message: ViewMessage): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const root = document.getElementById("app");
if (root) {
  const app = new ChatApp(root, (message) => vscode.postMessage(message));
  window.addEventListener("message", (event: MessageEvent<HostMessage>) => app.receive(event.data));
  // for tests and for a last render before the view hides
  (window as unknown as { openvaalaFlush: () => void }).openvaalaFlush = () => app.flush();
  vscode.postMessage({ type: "ready" });
}
