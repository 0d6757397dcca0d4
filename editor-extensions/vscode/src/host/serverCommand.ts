// Which `openvaala-lsp` to start for a workspace folder: the `openvaala.serverCommand` setting,
// else the project's virtualenv, else PATH. No `vscode` import (tested in Node).
import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
  source: "setting" | "virtualenv" | "path";
}

export type Resolution = { ok: true; server: ServerCommand } | { ok: false; message: string; searched: string[] };

export interface ResolveOptions {
  /** `openvaala.serverCommand`: a path or a command name; empty means "find it". */
  setting: string;
  args: string[];
  folder: string | undefined;
  pathEnv: string;
  platform?: NodeJS.Platform;
  isExecutable?: (path: string) => boolean;
}

export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
}

function onPath(name: string, pathEnv: string, platform: NodeJS.Platform, isExecutable: (path: string) => boolean): string | undefined {
  const names = platform === "win32" ? [`${name}.exe`, `${name}.cmd`, name] : [name];
  for (const directory of pathEnv.split(delimiter).filter(Boolean)) {
    for (const candidate of names) {
      const full = join(directory, candidate);
      if (isExecutable(full)) return full;
    }
  }
  return undefined;
}

export function resolveServerCommand(options: ResolveOptions): Resolution {
  const platform = options.platform ?? process.platform;
  const isExecutable = options.isExecutable ?? isExecutableFile;
  const setting = expandHome(options.setting.trim());
  const searched: string[] = [];
  if (setting) {
    if (isAbsolute(setting) || setting.includes("/") || setting.includes("\\")) {
      const full = isAbsolute(setting) || !options.folder ? setting : join(options.folder, setting);
      if (isExecutable(full)) return { ok: true, server: { command: full, args: options.args, source: "setting" } };
      return {
        ok: false,
        searched: [full],
        message: `openvaala.serverCommand is set to ${setting}, but ${full} is not an executable file.`,
      };
    }
    const found = onPath(setting, options.pathEnv, platform, isExecutable);
    if (found) return { ok: true, server: { command: found, args: options.args, source: "setting" } };
    return {
      ok: false,
      searched: [`${setting} on PATH`],
      message: `openvaala.serverCommand is set to ${setting}, which is not on PATH.`,
    };
  }
  if (options.folder) {
    const bin = platform === "win32" ? ["Scripts", "openvaala-lsp.exe"] : ["bin", "openvaala-lsp"];
    for (const venv of [".venv", "venv"]) {
      const candidate = join(options.folder, venv, ...bin);
      searched.push(candidate);
      if (isExecutable(candidate)) return { ok: true, server: { command: candidate, args: options.args, source: "virtualenv" } };
    }
  }
  searched.push("openvaala-lsp on PATH");
  const found = onPath("openvaala-lsp", options.pathEnv, platform, isExecutable);
  if (found) return { ok: true, server: { command: found, args: options.args, source: "path" } };
  return {
    ok: false,
    searched,
    message:
      "openvaala-lsp was not found (looked in the project's .venv and on PATH). Install openvaala " +
      "from a checkout (a wheel built from it, as its README's Install says, or `bash scripts/setup.sh` " +
      "in the checkout) or set `openvaala.serverCommand` to its path.",
  };
}

/** The `openvaala` command line next to the server, for `openvaala setup` (else from PATH). */
export function cliBeside(server: ServerCommand, isExecutable: (path: string) => boolean = isExecutableFile): string {
  const beside = join(dirname(server.command), process.platform === "win32" ? "openvaala.exe" : "openvaala");
  return isExecutable(beside) ? beside : "openvaala";
}
