// One `openvaala-lsp` per workspace folder, through vscode-languageclient, each wrapped in the
// protocol client. Started on first use; restarted on request; a restart by the language client
// (the server process died) makes every subscription recover.
import * as vscode from "vscode";
import { LanguageClient, State, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";
import type { ClientProvider } from "../chat/controller";
import { FixableError, readyStatus } from "../chat/controller";
import { Emitter } from "../client/emitter";
import { initializationOptions, newClientId } from "../client/initialization";
import { OpenvaalaClient } from "../client/openvaalaClient";
import type { ConnectionStatus, FolderInfo } from "../shared/messages";
import type { StatusReport } from "../shared/status";
import { PROTOCOL_VERSION } from "../protocol/generated";
import { resolveServerCommand, type ServerCommand } from "./serverCommand";

interface FolderConnection {
  folder: vscode.WorkspaceFolder;
  server: ServerCommand;
  languageClient: LanguageClient;
  client: OpenvaalaClient;
}

/** What the status command shows about a folder's connection. */
export interface ConnectionReport extends StatusReport {
  server?: ServerCommand;
}


export function folderKey(folder: vscode.WorkspaceFolder): string {
  return folder.uri.toString();
}

export class ServerConnections implements ClientProvider, vscode.Disposable {
  private readonly connections = new Map<string, FolderConnection>();
  private readonly starting = new Map<string, Promise<FolderConnection>>();
  private readonly statuses = new Map<string, ConnectionStatus>();
  private readonly statusEmitter = new Emitter<{ folder: string; status: ConnectionStatus }>();
  private readonly restartEmitter = new Emitter<{ folder: string; client: OpenvaalaClient }>();
  readonly onDidChangeStatus = this.statusEmitter.event;
  readonly onDidRestart = this.restartEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly output: vscode.LogOutputChannel) {
    this.disposables.push(
      vscode.workspace.onDidChangeWorkspaceFolders((event) => {
        for (const folder of event.removed) void this.stop(folderKey(folder));
      }),
    );
  }

  folders(): FolderInfo[] {
    return (vscode.workspace.workspaceFolders ?? []).map((folder) => ({ key: folderKey(folder), name: folder.name }));
  }

  status(folder: string): ConnectionStatus {
    return this.statuses.get(folder) ?? { state: "starting" };
  }

  private setStatus(folder: string, status: ConnectionStatus): void {
    this.statuses.set(folder, status);
    this.statusEmitter.fire({ folder, status });
  }

  async client(key: string): Promise<OpenvaalaClient> {
    const existing = this.connections.get(key);
    if (existing) return existing.client;
    let pending = this.starting.get(key);
    if (!pending) {
      pending = this.start(key).finally(() => this.starting.delete(key));
      this.starting.set(key, pending);
    }
    return (await pending).client;
  }

  /** The server command a folder would use (also for `openvaala setup`). */
  serverFor(folder: vscode.WorkspaceFolder): ServerCommand {
    const config = vscode.workspace.getConfiguration("openvaala", folder.uri);
    const resolution = resolveServerCommand({
      setting: config.get<string>("serverCommand", ""),
      args: config.get<string[]>("serverArgs", []),
      folder: folder.uri.scheme === "file" ? folder.uri.fsPath : undefined,
      pathEnv: process.env.PATH ?? "",
    });
    if (!resolution.ok) {
      throw new FixableError(resolution.message, { label: "Set openvaala.serverCommand", command: "settings" });
    }
    return resolution.server;
  }

  private async start(key: string): Promise<FolderConnection> {
    const folder = (vscode.workspace.workspaceFolders ?? []).find((f) => folderKey(f) === key);
    if (!folder) throw new FixableError("That workspace folder is no longer open.");
    this.setStatus(key, { state: "starting" });
    let server: ServerCommand;
    try {
      server = this.serverFor(folder);
    } catch (error) {
      const fix = error instanceof FixableError ? error.fix : undefined;
      this.setStatus(key, { state: "failed", message: (error as Error).message, ...(fix ? { fix } : {}) });
      throw error;
    }
    const config = vscode.workspace.getConfiguration("openvaala", folder.uri);
    const environment = config.get<Record<string, string>>("environment", {});
    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      options: { cwd: folder.uri.fsPath, env: { ...process.env, ...environment } },
    };
    const clientId = newClientId();
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      workspaceFolder: folder,
      outputChannel: this.output,
      // the same options after a restart by the language client: the runtime knows it as the same client
      initializationOptions: initializationOptions(clientId),
      connectionOptions: { maxRestartCount: 4 },
    };
    const languageClient = new LanguageClient("openvaala", `openvaala (${folder.name})`, serverOptions, clientOptions);
    this.output.info(`starting ${server.command} ${server.args.join(" ")} for ${folder.uri.fsPath} (${server.source})`);
    try {
      await languageClient.start();
    } catch (error) {
      const message = `openvaala-lsp (${server.command}) did not start: ${(error as Error).message}`;
      this.setStatus(key, { state: "failed", message, fix: { label: "Show the log", command: "log" } });
      await languageClient.dispose().catch(() => undefined);
      throw new FixableError(message, { label: "Show the log", command: "log" });
    }
    const client = new OpenvaalaClient(languageClient, languageClient.initializeResult, { clientId });
    const connection: FolderConnection = { folder, server, languageClient, client };
    this.connections.set(key, connection);
    const features = client.features;
    this.setStatus(key, readyStatus(client));
    if (features.protocolVersion && features.protocolVersion !== PROTOCOL_VERSION) {
      this.output.warn(`openvaala-lsp speaks protocol ${features.protocolVersion}; this extension was built for ${PROTOCOL_VERSION}`);
    }
    if (features.sandbox) {
      const { usable, reason } = features.sandbox;
      this.output.info(usable ? `shell commands run sandboxed: ${reason}` : `the sandbox cannot start here: ${reason}`);
    }
    client.onRuntimeRestart(() => this.output.info("the openvaala runtime restarted; subscriptions are being renewed"));
    languageClient.onDidChangeState(({ oldState, newState }) => {
      if (newState === State.Stopped && this.connections.get(key) === connection) {
        this.setStatus(key, { state: "reconnecting", message: "openvaala-lsp stopped; restarting…" });
      }
      if (oldState === State.Starting && newState === State.Running && this.connections.get(key) === connection) {
        void client.reconnected(languageClient.initializeResult);
        this.setStatus(key, readyStatus(client));
        this.restartEmitter.fire({ folder: key, client });
      }
    });
    return connection;
  }

  /** The folder's connection as the status command describes it. */
  report(key: string): ConnectionReport {
    const connection = this.connections.get(key);
    return {
      folder: connection?.folder.name ?? key,
      status: this.status(key),
      ...(connection ? { server: connection.server } : {}),
    };
  }

  async restart(key: string): Promise<void> {
    await this.stop(key);
    const client = await this.client(key);
    this.restartEmitter.fire({ folder: key, client });
  }

  async stop(key: string): Promise<void> {
    const connection = this.connections.get(key);
    if (!connection) return;
    this.connections.delete(key);
    connection.client.dispose();
    try {
      await connection.languageClient.stop(3000);
    } catch (error) {
      this.output.warn(`stopping openvaala-lsp: ${(error as Error).message}`);
    }
    this.statuses.delete(key);
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.connections.keys()].map((key) => this.stop(key)));
    for (const disposable of this.disposables) disposable.dispose();
    this.statusEmitter.dispose();
    this.restartEmitter.dispose();
  }
}
