// An agent's permissions and sandbox in words, as `listAgents` gives them (as defined; absent: the
// runtime's defaults), for the agent picker and the status command. No `vscode` import.
import type { AgentInfo, PermissionDecision, Permissions, Sandbox } from "../protocol/generated";

const DECISIONS: Record<PermissionDecision, string> = { allow: "runs", ask: "asks", deny: "is refused" };
const EVERY: Record<PermissionDecision, string> = { allow: "every tool runs", ask: "every tool asks", deny: "every tool is refused" };
const OTHERS: Record<PermissionDecision, string> = { allow: "other tools run", ask: "other tools ask", deny: "other tools are refused" };

/** The runtime's defaults (runtime/permissions.py): the shell runs in the sandbox, leaving it asks,
 * every other tool runs. */
export const DEFAULT_PERMISSIONS = "the defaults (the shell runs sandboxed and asks to leave the sandbox; other tools run)";

/** "shell asks, mcp__* is refused; other tools run". */
export function describePermissions(permissions: Permissions | undefined): string {
  const rules = Object.entries(permissions?.tools ?? {}).filter((entry): entry is [string, PermissionDecision] => entry[1] !== undefined);
  const fallback = permissions?.default;
  if (rules.length === 0) return fallback ? EVERY[fallback] : DEFAULT_PERMISSIONS;
  const listed = rules.map(([tool, decision]) => `${tool} ${DECISIONS[decision] ?? decision}`).join(", ");
  return `${listed}; ${fallback ? OTHERS[fallback] : "other tools: the defaults"}`;
}

/** "workspace-write, no network". */
export function describeSandbox(sandbox: Sandbox | undefined): string {
  if (sandbox === undefined) return "workspace-write, no network (the default)";
  if (sandbox.mode === "off") return "off (shell commands run with your full rights)";
  return `${sandbox.mode}, ${sandbox.network ? "with network" : "no network"}`;
}

/** One line for the agent picker's detail and the status command. */
export function describeAgentPolicy(agent: Pick<AgentInfo, "permissions" | "sandbox">): string {
  return `Permissions: ${describePermissions(agent.permissions)} · Sandbox: ${describeSandbox(agent.sandbox)}`;
}
