// The real `openvaala-lsp` behind a plain vscode-jsonrpc connection, as the extension's client sees
// it: a private OPENVAALA_HOME per test (so a runtime host of its own, idle-exiting after 1 s), a
// workspace folder, and a user config whose model is the scripted fake model. `openvaala-lsp` runs
// in its default mode: a front that relays to the shared runtime host of that OPENVAALA_HOME, so a
// second Runtime joined to the first is a second editor on the same project.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  RequestType,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import type { RpcConnection } from "../../src/client/connection";
import { initializationOptions, newClientId } from "../../src/client/initialization";
import { OpenvaalaClient, type ClientOptions } from "../../src/client/openvaalaClient";
import type { FakeModel } from "./fakeModel";
import { SERVER } from "./paths";

export const API_KEY = "sk-test-not-a-real-key";

export function modelConfig(model: FakeModel): string {
  return [
    "[[models]]",
    'ref = { provider = "fake", name = "fake-model" }',
    'api = "openai-chat"',
    `baseUrl = "${model.baseUrl}"`,
    'apiKeyEnv = "FAKE_API_KEY"',
    "contextWindow = 8000",
    "",
  ].join("\n");
}

export interface RuntimeOptions {
  model?: FakeModel;
  /** initializationOptions.openvaala (merged over the extension's own). */
  openvaala?: Record<string, unknown>;
  client?: ClientOptions;
  /** Wraps the connection the client uses (e.g. to record the wire). */
  wrap?: (connection: RpcConnection) => RpcConnection;
  /** Another editor on the same project: the same OPENVAALA_HOME (so the same runtime host) and
   * workspace folder. The first Runtime owns them and removes them when it stops. */
  join?: Runtime;
}

export class Runtime {
  readonly notifications: { method: string; params: unknown }[] = [];
  private stderr = "";

  private constructor(
    readonly root: string,
    readonly home: string,
    readonly workspace: string,
    readonly process: ChildProcess,
    readonly connection: MessageConnection,
    readonly initializeResult: unknown,
    readonly client: OpenvaalaClient,
    readonly clientId: string,
    private readonly owner: boolean,
  ) {
    process.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-20_000);
    });
  }

  static async start(options: RuntimeOptions = {}): Promise<Runtime> {
    // short paths: the host's socket path must fit in sun_path
    const shared = options.join;
    const root = shared ? shared.root : mkdtempSync(join(tmpdir(), "ovx-"));
    const home = join(root, "h");
    const workspace = join(root, "ws");
    if (!shared) {
      mkdirSync(home);
      mkdirSync(workspace);
      if (options.model) writeFileSync(join(home, "config.toml"), modelConfig(options.model));
    }
    const child = spawn(SERVER, [], {
      cwd: workspace,
      env: {
        ...process.env,
        OPENVAALA_HOME: home,
        OPENVAALA_HOST_IDLE_SECONDS: "1",
        FAKE_API_KEY: API_KEY,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    if (!child.stdout || !child.stdin) throw new Error("no stdio");
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    connection.onRequest("workspace/workspaceFolders", () => [
      { uri: pathToFileURL(workspace).toString(), name: "ws" },
    ]);
    connection.listen();
    const initialize = new RequestType<unknown, unknown, unknown>("initialize");
    // what the extension sends (src/client/initialization.ts), events batched less for quick tests
    const clientId = newClientId();
    const initializeResult = await connection.sendRequest(initialize, {
      processId: process.pid,
      rootUri: pathToFileURL(workspace).toString(),
      workspaceFolders: [{ uri: pathToFileURL(workspace).toString(), name: "ws" }],
      capabilities: {},
      clientInfo: { name: "openvaala-vscode-tests" },
      initializationOptions: initializationOptions(clientId, { eventBatchMs: 2, ...options.openvaala }),
    });
    await connection.sendNotification("initialized", {});
    const client = new OpenvaalaClient(options.wrap ? options.wrap(connection) : connection, initializeResult, {
      retry: { attempts: 40, firstDelayMs: 50, maxDelayMs: 500 },
      clientId,
      ...options.client,
    });
    const runtime = new Runtime(root, home, workspace, child, connection, initializeResult, client, clientId, !shared);
    connection.onUnhandledNotification((message) => runtime.notifications.push(message as never));
    return runtime;
  }

  get log(): string {
    return this.stderr;
  }

  /** The pid of the runtime host that serves this home (`$OPENVAALA_HOME/run/host.pid`). */
  hostPid(): number {
    return Number.parseInt(readFileSync(join(this.home, "run", "host.pid"), "utf8").trim(), 10);
  }

  async stop(): Promise<void> {
    this.client.dispose();
    try {
      await Promise.race([
        (async () => {
          await this.connection.sendRequest(new RequestType<unknown, unknown, unknown>("shutdown"), undefined);
          await this.connection.sendNotification("exit");
        })(),
        new Promise((resolve) => setTimeout(resolve, 3_000)),
      ]);
    } catch {
      // the process may already be gone
    }
    const exited = new Promise<void>((resolve) => {
      if (this.process.exitCode !== null || this.process.signalCode !== null) resolve();
      else this.process.once("exit", () => resolve());
    });
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
    this.connection.dispose();
    if (!this.owner) return;
    await waitForHostExit(this.home);
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The host exits OPENVAALA_HOST_IDLE_SECONDS after its last editor left; wait for it so that no
 * test leaves a process behind. */
async function waitForHostExit(home: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    let pid: number;
    try {
      pid = Number.parseInt(readFileSync(join(home, "run", "host.pid"), "utf8").trim(), 10);
    } catch {
      return;
    }
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
