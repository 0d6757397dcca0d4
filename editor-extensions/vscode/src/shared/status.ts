// The connection's state in words, for the "Show Status" command, the chat view's sandbox badge and
// the status bar tooltip. No `vscode` import (tested in Node, used by the webview too).
import type { SandboxState } from "../client/rpc";
import type { AgentInfo } from "../protocol/generated";
import { describeAgentPolicy } from "./agents";
import type { ConnectionStatus } from "./messages";

export interface SandboxSummary {
  /** Short, for a badge: "Sandboxed", "No sandbox", "Sandbox unknown". */
  label: string;
  /** A sentence or two: what it means for shell commands, and why. */
  detail: string;
  usable: boolean | undefined;
}

export function sandboxSummary(sandbox: SandboxState | undefined): SandboxSummary {
  if (sandbox === undefined) {
    return {
      label: "Sandbox unknown",
      detail: "This openvaala-lsp does not say whether it can sandbox shell commands (it predates protocol 0.3).",
      usable: undefined,
    };
  }
  if (sandbox.usable) {
    return {
      label: "Sandboxed",
      detail:
        "Shell commands run in a sandbox: the workspace is writable, /tmp is private, and there is no network " +
        `unless the agent allows it. ${sandbox.reason ? `(${sandbox.reason})` : ""}`.trim(),
      usable: true,
    };
  }
  return {
    label: "No sandbox",
    detail:
      `The sandbox cannot start here${sandbox.reason ? `: ${sandbox.reason}` : ""}. ` +
      "Shell commands ask for your approval before they run unsandboxed.",
    usable: false,
  };
}

export interface StatusReport {
  folder: string;
  status: ConnectionStatus;
  server?: { command: string; args: string[]; source: string };
  /** The runtime's agents (`listAgents`), with their permissions and sandbox. */
  agents?: AgentInfo[];
}

/** The lines of the status command's message. */
export function statusLines(report: StatusReport): string[] {
  const lines = [`Folder: ${report.folder}`];
  if (report.server) {
    const how = { setting: "from openvaala.serverCommand", virtualenv: "the project's virtualenv", path: "from PATH" }[report.server.source] ?? report.server.source;
    lines.push(`Server: ${[report.server.command, ...report.server.args].join(" ")} (${how})`);
  }
  const status = report.status;
  switch (status.state) {
    case "ready": {
      lines.push(`Connected: openvaala-lsp ${status.serverVersion || "?"}, protocol ${status.protocolVersion || "?"}`);
      const sandbox = sandboxSummary(status.sandbox);
      lines.push(`${sandbox.label}: ${sandbox.detail}`);
      lines.push(
        "Approvals: this window shows approval prompts, sub-agents' included, and answers them (Allow once, Allow always, Deny).",
      );
      for (const agent of report.agents ?? []) lines.push(`Agent ${agent.name}: ${describeAgentPolicy(agent)}`);
      break;
    }
    case "starting":
      lines.push("Starting openvaala-lsp…");
      break;
    case "reconnecting":
      lines.push(`Reconnecting: ${status.message}`);
      break;
    case "failed":
      lines.push(`Not connected: ${status.message}`);
      break;
  }
  return lines;
}
