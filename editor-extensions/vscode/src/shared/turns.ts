// A turn in words: why it ended (when the view should say so) and what it changed in sum.
import type { TurnFile, TurnInfo } from "./messages";

const REASONS: Record<string, string> = {
  runtimeStopped: "The openvaala runtime stopped during this turn (it restarted). The answer above is what was saved before it stopped.",
  maxTokens: "The model reached its output limit.",
  limitReached: "The turn reached a limit of the runtime.",
  cancelledByHook: "A hook stopped the turn.",
};

/** Why a turn ended, in words, when the view should say it under the turn. */
export function reasonText(info: TurnInfo): string | undefined {
  if (!info.reason || info.reason === "completed") return undefined;
  // an interrupt by the user or a failure already show (the stop the user made, the error banner)
  if (info.reason === "runtimeStopped") return REASONS.runtimeStopped;
  if (info.reason === "maxTokens" || info.reason === "limitReached" || info.reason === "cancelledByHook") return REASONS[info.reason];
  return undefined;
}

/** "3 files changed +12 −4". */
export function filesSummary(files: readonly TurnFile[]): string {
  const additions = files.reduce((sum, file) => sum + file.additions, 0);
  const deletions = files.reduce((sum, file) => sum + file.deletions, 0);
  return `${files.length} ${files.length === 1 ? "file" : "files"} changed +${additions} −${deletions}`;
}
