// An ACP editor for the tests: the official TypeScript SDK's ClientSideConnection to the agent command
// given as arguments (openvaala-lsp --acp). It takes commands on stdin, one JSON object per line,
// {id, op, params} with op a ClientSideConnection method (initialize, newSession, prompt, ...), or
// "answers" (permission answers to give, in order: an option id or "cancelled") or "close" (end the
// agent's stdin); and writes one JSON line per answer ({id, result} or {id, error}), per session
// update ({update}), per permission asked ({permission}) and when the agent exits ({exit}).
import { spawn } from "node:child_process";
import readline from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const say = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const answers = [];

class Editor {
  async requestPermission(params) {
    say({ permission: params });
    const answer = answers.shift() ?? "deny";
    if (answer === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: answer } };
  }
  async sessionUpdate(params) {
    say({ update: params });
  }
}

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const connection = new acp.ClientSideConnection(() => new Editor(), stream);

readline.createInterface({ input: process.stdin }).on("line", async (line) => {
  const { id, op, params } = JSON.parse(line);
  try {
    let result = {};
    if (op === "answers") answers.push(...params);
    else if (op === "close") agent.stdin.end();
    else result = (await connection[op](params)) ?? null;
    say({ id, result });
  } catch (error) {
    say({ id, error: { code: error.code, message: error.message, data: error.data } });
  }
});
agent.on("exit", (code) => {
  say({ exit: code });
  process.exit(0);
});
