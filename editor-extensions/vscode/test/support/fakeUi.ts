// The editor as the chat controller sees it (ChatUi), recorded: what it posted to the view, the
// commands it ran, the diffs and files it opened; files read from the disk unless set.
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ChatUi, ClientProvider, DiffView } from "../../src/chat/controller";
import { readyStatus } from "../../src/chat/controller";
import { Emitter } from "../../src/client/emitter";
import type { OpenvaalaClient } from "../../src/client/openvaalaClient";
import type { AgentInfo } from "../../src/protocol/generated";
import type { HostCommand, HostMessage } from "../../src/shared/messages";

export class FakeUi implements ChatUi {
  readonly posts: HostMessage[] = [];
  readonly commands: HostCommand[] = [];
  confirmAnswer = true;
  inputAnswer: string | undefined = undefined;
  post(message: HostMessage): void {
    this.posts.push(message);
  }
  confirm(): Promise<boolean> {
    return Promise.resolve(this.confirmAnswer);
  }
  input(): Promise<string | undefined> {
    return Promise.resolve(this.inputAnswer);
  }
  agentsOffered: string[][] = [];
  agentInfos: AgentInfo[][] = [];
  agentAnswer: string | undefined = undefined;
  pickAgent(agents: AgentInfo[]): Promise<AgentInfo | undefined> {
    this.agentsOffered.push(agents.map((agent) => agent.name));
    this.agentInfos.push(agents);
    return Promise.resolve(agents.find((agent) => agent.name === this.agentAnswer));
  }
  runCommand(command: HostCommand): void {
    this.commands.push(command);
  }
  openLink(): void {}
  readonly diffs: DiffView[] = [];
  readonly opened: { path: string; line?: number }[] = [];
  /** Files the fake editor reads: the real disk unless set here. */
  files = new Map<string, string>();
  showDiff(diff: DiffView): Promise<void> {
    this.diffs.push(diff);
    return Promise.resolve();
  }
  openFile(_folder: string | undefined, path: string, line?: number): Promise<void> {
    this.opened.push({ path, ...(line ? { line } : {}) });
    return Promise.resolve();
  }
  /** Where relative paths are read from (the workspace folder). */
  root: string | undefined;
  readFile(_folder: string | undefined, path: string): Promise<string | undefined> {
    if (this.files.has(path)) return Promise.resolve(this.files.get(path));
    try {
      return Promise.resolve(readFileSync(this.root && !isAbsolute(path) ? join(this.root, path) : path, "utf8"));
    } catch {
      return Promise.resolve(undefined);
    }
  }
  workspaceFiles(): Promise<string[]> {
    return Promise.resolve([...this.files.keys()]);
  }
  of<T extends HostMessage["type"]>(type: T): Extract<HostMessage, { type: T }>[] {
    return this.posts.filter((m): m is Extract<HostMessage, { type: T }> => m.type === type);
  }
}

export function provider(client: OpenvaalaClient, key = "file:///ws"): ClientProvider {
  return {
    folders: () => [{ key, name: "ws" }],
    client: () => Promise.resolve(client),
    status: () => readyStatus(client),
    onDidChangeStatus: new Emitter<{ folder: string; status: never }>().event,
    onDidRestart: new Emitter<{ folder: string; client: OpenvaalaClient }>().event,
  };
}
