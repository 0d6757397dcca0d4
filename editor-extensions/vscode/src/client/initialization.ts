// What the extension tells `openvaala-lsp` at `initialize` (schemas/README.md "Initialization
// options"): its name where the runtime says who did something, an id of its own for this
// connection, and that it answers approvals. The extension and the tests send the same.

/** How the runtime names this editor, e.g. in `approvalResolved.by.name`. */
export const CLIENT_NAME = "VS Code";

export interface OpenvaalaInitializationOptions {
  clientId: string;
  clientName: string;
  /** This editor shows approval prompts and answers them with `openvaala/answerApproval`. */
  approvals: boolean;
  eventBatchMs?: number;
  maxBufferedEvents?: number;
}

/** A fresh id per connection: `approvalResolved.by.clientId` then tells this window from another. */
export function newClientId(): string {
  return `vscode-${globalThis.crypto.randomUUID()}`;
}

export function initializationOptions(
  clientId: string,
  overrides: Partial<OpenvaalaInitializationOptions> = {},
): { openvaala: OpenvaalaInitializationOptions } {
  return { openvaala: { clientId, clientName: CLIENT_NAME, approvals: true, ...overrides } };
}
