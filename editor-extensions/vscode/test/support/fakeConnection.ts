// An in-memory RpcConnection for unit tests: requests answered by handlers, notifications pushed by
// the test. Unknown methods fail like a server without them (methodNotFound).
import type { Disposable, NotificationType, RequestType } from "vscode-jsonrpc";
import type { RpcConnection } from "../../src/client/connection";

export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: { kind: string },
  ) {
    super(message);
  }
}

export function failure(kind: string, code: number, message = kind): RpcFailure {
  return new RpcFailure(code, message, { kind });
}

type Handler = (params: never) => unknown;

export class FakeConnection implements RpcConnection {
  readonly calls: { method: string; params: unknown }[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly listeners = new Map<string, (params: unknown) => void>();

  handle<P>(method: string, handler: (params: P) => unknown): this {
    this.handlers.set(method, handler as Handler);
    return this;
  }

  async sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P): Promise<R> {
    this.calls.push({ method: type.method, params });
    await Promise.resolve();
    const handler = this.handlers.get(type.method);
    if (!handler) throw failure("methodNotFound", -32601, `no such method ${type.method}`);
    return (await handler(params as never)) as R;
  }

  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable {
    this.listeners.set(type.method, handler as (params: unknown) => void);
    return { dispose: () => this.listeners.delete(type.method) };
  }

  notify(method: string, params: unknown): void {
    this.listeners.get(method)?.(params);
  }

  callsOf(method: string): unknown[] {
    return this.calls.filter((call) => call.method === method).map((call) => call.params);
  }
}
