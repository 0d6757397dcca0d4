// Retrying requests across a runtime restart.
import { errorKind } from "../protocol/errors";

/** Errors after which the same request may succeed shortly: the front is starting a new runtime
 * host (runtimeStopped), or the editor's client is restarting its connection. */
export function isTransient(error: unknown): boolean {
  const kind = errorKind(error);
  return kind === "runtimeStopped" || kind === "connection";
}

export interface RetryPolicy {
  attempts: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, firstDelayMs: 100, maxDelayMs: 3_000 };

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `action` until it succeeds, fails with a non-transient error, or the attempts run out. */
export async function withRetry<T>(
  action: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY,
  stopped: () => boolean = () => false,
): Promise<T> {
  let wait = policy.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      if (!isTransient(error) || attempt >= policy.attempts || stopped()) throw error;
      await delay(wait);
      wait = Math.min(wait * 2, policy.maxDelayMs);
    }
  }
}
