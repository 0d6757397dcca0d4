// JSON-RPC errors as the protocol defines them: every error carries `data.kind` (PROTOCOL.md §5).
import { ERROR_CODES, type ErrorKind } from "./generated";

const KIND_BY_CODE = new Map<number, ErrorKind>(
  Object.entries(ERROR_CODES).map(([kind, code]) => [code, kind as ErrorKind]),
);

/** A request that failed: `kind` is the protocol's error kind (from `data.kind`, else the code). */
export class ProtocolError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly kind: ErrorKind | "connection" | "unknown",
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "ProtocolError";
  }

  /** `data.errors` of an invalidParams error: each problem with its `$.path`. */
  get problems(): string[] {
    const errors = isRecord(this.data) ? this.data.errors : undefined;
    return Array.isArray(errors) ? errors.filter((e): e is string => typeof e === "string") : [];
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}

/** Any rejection of a request (a vscode-jsonrpc ResponseError, a closed connection, ...) as a ProtocolError. */
export function toProtocolError(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (isRecord(error) && typeof error.code === "number") {
    const message = typeof error.message === "string" ? error.message : String(error.code);
    const data = error.data;
    const dataKind = isRecord(data) ? data.kind : undefined;
    const kind = isErrorKind(dataKind) ? dataKind : (KIND_BY_CODE.get(error.code) ?? "unknown");
    return new ProtocolError(message, error.code, kind, data);
  }
  const message = error instanceof Error ? error.message : String(error);
  // vscode-jsonrpc rejects with a plain Error when the connection is closed or disposed
  return new ProtocolError(message, 0, "connection");
}

export function errorKind(error: unknown): ProtocolError["kind"] {
  return toProtocolError(error).kind;
}

/** Kinds after which a closed subscription should be re-established (PROTOCOL.md §3). */
export const RESUBSCRIBE_KINDS: ReadonlySet<string> = new Set([
  "runtimeStopped",
  "subscriberTooSlow",
  "conversationReconfigured",
]);
