// Small pure pieces: server discovery, markdown safety and streaming boundaries, diffs, tool
// presentation, usage rows, protocol errors and features.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { initializationOptions, newClientId } from "../../src/client/initialization";
import { serverFeatures } from "../../src/client/rpc";
import { describeDecision } from "../../src/shared/approvals";
import { describeAgentPolicy, describePermissions, describeSandbox } from "../../src/shared/agents";
import { sandboxSummary, statusLines } from "../../src/shared/status";
import { ProtocolError, toProtocolError } from "../../src/protocol/errors";
import { diffLines } from "../../src/shared/diff";
import { presentTool } from "../../src/shared/tools";
import { cliBeside, resolveServerCommand } from "../../src/host/serverCommand";
import { parseUsage, seriesOf, sinceDay, daysFrom } from "../../src/usage/usageData";
import { renderMarkdown, stableBoundary } from "../../src/webview/chat/markdown";

describe("finding openvaala-lsp", () => {
  const executables = (...paths: string[]) => (path: string) => paths.includes(path);

  it("prefers the setting, then the project's virtualenv, then PATH", () => {
    const base = { args: [], folder: "/proj", pathEnv: "/usr/bin:/opt/bin", platform: "linux" as const };
    const all = executables("/custom/lsp", "/proj/.venv/bin/openvaala-lsp", "/opt/bin/openvaala-lsp");
    assert.deepEqual(resolveServerCommand({ ...base, setting: "/custom/lsp", isExecutable: all }), {
      ok: true,
      server: { command: "/custom/lsp", args: [], source: "setting" },
    });
    const venv = resolveServerCommand({ ...base, setting: "", isExecutable: all });
    assert.ok(venv.ok && venv.server.command === "/proj/.venv/bin/openvaala-lsp" && venv.server.source === "virtualenv");
    const path = resolveServerCommand({ ...base, setting: "", isExecutable: executables("/opt/bin/openvaala-lsp") });
    assert.ok(path.ok && path.server.command === "/opt/bin/openvaala-lsp" && path.server.source === "path");
    const relative = resolveServerCommand({ ...base, setting: "tools/lsp", args: ["--log-level", "INFO"], isExecutable: executables("/proj/tools/lsp") });
    assert.deepEqual(relative, { ok: true, server: { command: "/proj/tools/lsp", args: ["--log-level", "INFO"], source: "setting" } });
  });

  it("says what it searched and how to fix it when nothing is found", () => {
    const missing = resolveServerCommand({ setting: "", args: [], folder: "/proj", pathEnv: "/usr/bin", platform: "linux", isExecutable: () => false });
    assert.equal(missing.ok, false);
    if (missing.ok) return;
    assert.deepEqual(missing.searched, ["/proj/.venv/bin/openvaala-lsp", "/proj/venv/bin/openvaala-lsp", "openvaala-lsp on PATH"]);
    assert.match(missing.message, /openvaala\.serverCommand/);
    const wrong = resolveServerCommand({ setting: "/nope", args: [], folder: "/proj", pathEnv: "", platform: "linux", isExecutable: () => false });
    assert.ok(!wrong.ok && /not an executable file/.test(wrong.message));
  });

  it("runs `openvaala setup` with the CLI next to the server", () => {
    const server = { command: "/proj/.venv/bin/openvaala-lsp", args: [], source: "virtualenv" as const };
    assert.equal(cliBeside(server, (path) => path === "/proj/.venv/bin/openvaala"), "/proj/.venv/bin/openvaala");
    assert.equal(cliBeside(server, () => false), "openvaala");
  });
});

describe("markdown of model output", () => {
  it("never lets markup or script through", () => {
    const html = renderMarkdown(
      'Hi <script>alert(1)</script> <img src=x onerror="alert(1)"> [x](javascript:alert(1)) ![t](https://evil.example/t.png) <a href="#" onclick="x()">a</a>',
    );
    // the only elements are markdown's own, with no attribute at all here
    const tags = [...html.matchAll(/<\/?([a-z0-9]+)([^>]*)>/gi)];
    assert.deepEqual([...new Set(tags.map((tag) => tag[1]))], ["p"], html);
    assert.ok(tags.every((tag) => tag[2] === ""), html);
    assert.match(html, /&lt;script&gt;/, "markup shows as text");
    assert.match(html, /\[x\]\(javascript:alert\(1\)\)/, "a javascript: link stays plain text");
    assert.ok(!html.includes("evil.example"), "no remote image (a beacon): only its alt text");
  });

  it("keeps safe links and inline images", () => {
    const html = renderMarkdown("[docs](https://example.com/a) ![dot](data:image/png;base64,iVBORw0KGgo=)");
    assert.match(html, /<a href="https:\/\/example\.com\/a">docs<\/a>/);
    assert.match(html, /<img src="data:image\/png;base64,iVBORw0KGgo="/);
  });

  it("finds where streamed text can be split: after a blank line outside code fences", () => {
    assert.equal(stableBoundary("one paragraph still growing"), 0);
    assert.equal(stableBoundary("first\n\nsecond"), "first\n\n".length);
    const fenced = "intro\n\n```\ncode\n\nmore code\n";
    assert.equal(stableBoundary(fenced), "intro\n\n".length, "no split inside an open fence");
    const closed = "```\na\n\nb\n```\n\nafter";
    assert.equal(stableBoundary(closed), closed.length - "after".length);
  });
});

describe("diffs and tool calls", () => {
  it("diffs lines with the common context kept", () => {
    assert.deepEqual(diffLines("a\nb\nc\n", "a\nB\nc\n"), [
      { kind: "same", text: "a" },
      { kind: "removed", text: "b" },
      { kind: "added", text: "B" },
      { kind: "same", text: "c" },
    ]);
    assert.deepEqual(diffLines("", "new\n"), [{ kind: "added", text: "new" }]);
  });

  it("presents the built-in tools", () => {
    assert.deepEqual(presentTool("edit", JSON.stringify({ path: "a.py", old_string: "x", new_string: "y" })), {
      kind: "edit",
      summary: "a.py",
      path: "a.py",
      before: "x",
      after: "y",
    });
    assert.equal(presentTool("write_file", JSON.stringify({ path: "b", content: "c" })).kind, "write");
    assert.equal(presentTool("grep", JSON.stringify({ pattern: "TODO", path: "src" })).summary, "TODO in src");
    assert.deepEqual(presentTool("shell", '{"command": "echo hi'), { kind: "other", summary: "" }, "partial JSON while streaming");
    assert.equal(presentTool("shell", JSON.stringify({ command: "curl x", outside_sandbox: true })).outsideSandbox, true);
  });
});

describe("usage rows", () => {
  it("reads rows by column name and makes one series per model", () => {
    const rows = parseUsage({
      columns: ["model", "day", "provider", "total_tokens", "input_tokens", "output_tokens", "calls"].map((name) => ({ name, type: "BIGINT" })),
      rows: [
        ["m1", "2026-01-02", "p", 100, 80, 20, 2],
        ["m2", "2026-01-02", "p", 10, 8, 2, 1],
        ["m1", "2026-01-03", "p", 50, 40, 10, 1],
      ],
      truncated: false,
    });
    assert.equal(rows[0]?.totalTokens, 100);
    const series = seriesOf(rows, "totalTokens");
    assert.deepEqual(series.map((s) => [s.key, s.total]), [["p/m1", 150], ["p/m2", 10]]);
    assert.equal(series[0]?.values.get("2026-01-03"), 50);
  });

  it("covers every day of the range", () => {
    const now = new Date("2026-03-02T10:00:00Z");
    assert.equal(sinceDay(3, now), "2026-02-28");
    assert.deepEqual(daysFrom("2026-02-28", now), ["2026-02-28", "2026-03-01", "2026-03-02"]);
  });
});

describe("protocol errors and features", () => {
  it("reads the kind from data.kind, else from the code", () => {
    const withKind = toProtocolError({ code: -32013, message: "no model", data: { kind: "noModelConfigured" } });
    assert.equal(withKind.kind, "noModelConfigured");
    assert.equal(toProtocolError({ code: -32014, message: "stopped" }).kind, "runtimeStopped");
    const invalid = toProtocolError({ code: -32602, message: "bad", data: { kind: "invalidParams", errors: ["required field missing @ $.conversationId"] } });
    assert.deepEqual(invalid.problems, ["required field missing @ $.conversationId"]);
    assert.equal(toProtocolError(new Error("Connection is disposed.")).kind, "connection");
    assert.ok(toProtocolError(withKind) === withKind && withKind instanceof ProtocolError);
  });

  it("reads the advertised methods and the sandbox from initialize", () => {
    const sandbox = { usable: false, reason: "bwrap: No permissions to create a new namespace" };
    const features = serverFeatures({
      capabilities: { experimental: { openvaala: { protocolVersion: "0.3", serverVersion: "1", methods: ["openvaala/query"], sandbox } } },
    });
    assert.equal(features.protocolVersion, "0.3");
    assert.ok(features.methods.has("openvaala/query"));
    assert.deepEqual(features.sandbox, sandbox);
    assert.equal(serverFeatures(null).methods.size, 0);
    assert.equal(serverFeatures(null).sandbox, undefined, "an older server says nothing about the sandbox");
  });

  it("sends the initialization options that make the runtime count this editor as one that answers approvals", () => {
    const id = newClientId();
    assert.match(id, /^vscode-[0-9a-f-]{36}$/);
    assert.notEqual(newClientId(), id);
    assert.deepEqual(initializationOptions(id), { openvaala: { clientId: id, clientName: "VS Code", approvals: true } });
  });
});

describe("approvals and the sandbox in words", () => {
  it("says what was decided and who decided it", () => {
    const mine = { kind: "client" as const, name: "VS Code", clientId: "vscode-1" };
    assert.equal(describeDecision("allowOnce", mine, "vscode-1"), "Allowed once by VS Code (this window)");
    assert.equal(describeDecision("allowAlways", { ...mine, clientId: "vscode-2" }, "vscode-1"), "Allowed for this conversation by VS Code (another window)");
    assert.equal(describeDecision("deny", { kind: "client", name: "Neovim", clientId: "nvim" }, "vscode-1"), "Denied by Neovim (another window)");
    assert.equal(describeDecision("deny", { kind: "user" }), "Denied by the user, by stopping the turn");
    assert.equal(describeDecision("deny", { kind: "session", sessionId: "sess_1" }), "Denied by the runtime: no editor that can answer was left watching");
  });

  it("describes the sandbox state and the connection", () => {
    assert.equal(sandboxSummary({ usable: true, reason: "bubblewrap (/usr/bin/bwrap)" }).label, "Sandboxed");
    assert.match(sandboxSummary({ usable: true, reason: "bubblewrap (/usr/bin/bwrap)" }).detail, /workspace is writable.*\(bubblewrap \(\/usr\/bin\/bwrap\)\)/);
    const off = sandboxSummary({ usable: false, reason: "no user namespaces" });
    assert.equal(off.label, "No sandbox");
    assert.match(off.detail, /cannot start here: no user namespaces\. Shell commands ask for your approval/);
    assert.equal(sandboxSummary(undefined).usable, undefined);
    const lines = statusLines({
      folder: "project",
      server: { command: "/p/.venv/bin/openvaala-lsp", args: [], source: "virtualenv" },
      status: { state: "ready", serverVersion: "0.2.0", protocolVersion: "0.3", sandbox: { usable: false, reason: "no user namespaces" } },
    });
    assert.deepEqual(lines.slice(0, 3), [
      "Folder: project",
      "Server: /p/.venv/bin/openvaala-lsp (the project's virtualenv)",
      "Connected: openvaala-lsp 0.2.0, protocol 0.3",
    ]);
    assert.match(lines[3] ?? "", /^No sandbox: /);
    const withAgents = statusLines({
      folder: "project",
      status: { state: "ready", serverVersion: "0.2.0", protocolVersion: "0.3" },
      agents: [
        { name: "default", description: "" },
        { name: "guarded", description: "", permissions: { default: "ask" }, sandbox: { mode: "read-only", network: false } },
      ],
    });
    assert.deepEqual(withAgents.slice(-2), [
      "Agent default: Permissions: the defaults (the shell runs sandboxed and asks to leave the sandbox; other tools run) · Sandbox: workspace-write, no network (the default)",
      "Agent guarded: Permissions: every tool asks · Sandbox: read-only, no network",
    ]);
    assert.deepEqual(statusLines({ folder: "p", status: { state: "failed", message: "openvaala-lsp was not found" } }), [
      "Folder: p",
      "Not connected: openvaala-lsp was not found",
    ]);
  });
});

describe("agents' permissions and sandbox in words (listAgents)", () => {
  it("says the runtime's defaults when an agent defines nothing", () => {
    assert.match(describePermissions(undefined), /^the defaults \(the shell runs sandboxed/);
    assert.equal(describeSandbox(undefined), "workspace-write, no network (the default)");
  });

  it("lists the tool rules, then what the other tools do", () => {
    assert.equal(describePermissions({ default: "allow", tools: { shell: "ask", "mcp__*": "deny" } }), "shell asks, mcp__* is refused; other tools run");
    assert.equal(describePermissions({ tools: { shell: "allow" } }), "shell runs; other tools: the defaults");
    assert.equal(describePermissions({ default: "deny" }), "every tool is refused");
    assert.equal(describeSandbox({ mode: "workspace-write", network: true }), "workspace-write, with network");
    assert.equal(describeSandbox({ mode: "off", network: false }), "off (shell commands run with your full rights)");
    assert.equal(
      describeAgentPolicy({ permissions: { default: "ask" }, sandbox: { mode: "read-only", network: false } }),
      "Permissions: every tool asks · Sandbox: read-only, no network",
    );
  });
});
