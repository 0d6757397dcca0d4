// tests/fake_model_cli.py driven from Node: a scripted OpenAI-compatible model server on 127.0.0.1.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import { FAKE_MODEL_CLI, PYTHON } from "./paths";

/** `["text", "Hel", "lo"]`, `["reasoning", "..."]`, `["tool_call", id, name, [fragments]]`,
 * `["pause", seconds]`, `["deltas", n, piece]`, `["finish", usage?]` (see fake_model_cli.py). */
export type Step = (string | number | string[] | Record<string, unknown>)[];

export interface RecordedRequest {
  path: string;
  json: { messages?: { role: string; content: unknown }[] } & Record<string, unknown>;
}

export class FakeModel {
  private readonly answers: ((line: string) => void)[] = [];
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly process: ChildProcessWithoutNullStreams,
    private readonly lines: Interface,
    readonly baseUrl: string,
  ) {
    lines.on("line", (line) => this.answers.shift()?.(line));
  }

  static async start(): Promise<FakeModel> {
    const child = spawn(PYTHON, [FAKE_MODEL_CLI], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = createInterface({ input: child.stdout });
    const first = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`fake model did not start: ${stderr}`)), 20_000);
      lines.once("line", (line) => {
        clearTimeout(timer);
        resolve(line);
      });
      child.once("exit", (code) => reject(new Error(`fake model exited with ${code}: ${stderr}`)));
    });
    const hello = JSON.parse(first) as { baseUrl: string };
    return new FakeModel(child, lines, hello.baseUrl);
  }

  private command<T>(command: Record<string, unknown>): Promise<T> {
    const run = this.chain.then(
      () =>
        new Promise<T>((resolve, reject) => {
          this.answers.push((line) => {
            const answer = JSON.parse(line) as T & { error?: string };
            if (answer.error) reject(new Error(answer.error));
            else resolve(answer);
          });
          this.process.stdin.write(JSON.stringify(command) + "\n");
        }),
    );
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Queues one streamed response. */
  async enqueue(...responses: Step[][]): Promise<void> {
    for (const steps of responses) await this.command({ enqueue: steps });
  }

  /** Served whenever the queue is empty. */
  async setDefault(steps: Step[]): Promise<void> {
    await this.command({ default: steps });
  }

  async requests(): Promise<RecordedRequest[]> {
    return (await this.command<{ requests: RecordedRequest[] }>({ requests: true })).requests;
  }

  async stop(): Promise<void> {
    this.process.stdin.end();
    await new Promise<void>((resolve) => {
      if (this.process.exitCode !== null) resolve();
      else this.process.once("exit", () => resolve());
    });
    this.lines.close();
  }
}
