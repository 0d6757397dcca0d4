// How the chat view presents the built-in tools' calls: a one-line summary and, for edits, the
// before/after text. Tool arguments are JSON text (possibly partial while they stream).

export interface ToolPresentation {
  /** `shell`, `edit`, `write`, `read`, `search` or `other`: decides how the call is drawn. */
  kind: "shell" | "edit" | "write" | "read" | "search" | "other";
  summary: string;
  command?: string;
  /** A shell command that asks to leave the sandbox (`outside_sandbox: true`). */
  outsideSandbox?: boolean;
  path?: string;
  before?: string;
  after?: string;
}

export function parseToolArguments(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function presentTool(name: string, argumentsText: string): ToolPresentation {
  const args = parseToolArguments(argumentsText);
  if (args === undefined) return { kind: "other", summary: "" };
  const path = str(args.path) ?? str(args.file_path) ?? str(args.file);
  switch (name) {
    case "shell":
    case "bash": {
      const command = str(args.command) ?? "";
      return {
        kind: "shell",
        summary: command.split("\n")[0] ?? "",
        command,
        ...(args.outside_sandbox === true ? { outsideSandbox: true } : {}),
      };
    }
    case "edit": {
      const before = str(args.old_string) ?? "";
      const after = str(args.new_string) ?? "";
      return { kind: "edit", summary: path ?? "", ...(path ? { path } : {}), before, after };
    }
    case "write_file":
    case "write": {
      return { kind: "write", summary: path ?? "", ...(path ? { path } : {}), before: "", after: str(args.content) ?? "" };
    }
    case "read_file":
    case "read":
      return { kind: "read", summary: path ?? "", ...(path ? { path } : {}) };
    case "grep":
    case "glob":
    case "search": {
      const pattern = str(args.pattern) ?? str(args.query) ?? "";
      return { kind: "search", summary: pattern + (path ? ` in ${path}` : "") };
    }
    default:
      return { kind: "other", summary: path ?? "" };
  }
}
