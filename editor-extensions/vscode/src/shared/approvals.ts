// How an approval's outcome reads on screen: what was decided and who decided it
// (`approvalResolved {decision, by}`, schemas/README.md "Approvals").
import type { Address, ApprovalDecision } from "../protocol/generated";

const DECISIONS: Record<ApprovalDecision, string> = {
  allowOnce: "Allowed once",
  allowAlways: "Allowed for this conversation",
  deny: "Denied",
};

/** Who decided: an editor (this window or another), the user by interrupting, or nobody left to ask. */
export function describeDecider(by: Address, ownClientId?: string): string {
  switch (by.kind) {
    case "client": {
      const name = by.name || by.clientId || "an editor";
      if (ownClientId && by.clientId === ownClientId) return `${name} (this window)`;
      return by.clientId && by.name ? `${name} (another window)` : name;
    }
    case "user":
      return "the user, by stopping the turn";
    case "session":
      return "the runtime: no editor that can answer was left watching";
    case "hook":
      return by.name ? `the hook ${by.name}` : "a hook";
    default:
      return String(by.kind);
  }
}

/** "Allowed once by VS Code (this window)". */
export function describeDecision(decision: ApprovalDecision, by: Address, ownClientId?: string): string {
  const what = DECISIONS[decision] ?? decision;
  return `${what} by ${describeDecider(by, ownClientId)}`;
}
