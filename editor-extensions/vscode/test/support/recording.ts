// A wire log of what the client sent and received, recorded through the RpcConnection seam: the
// fixture of the webview tests is one such log from a real run.
import type { CancellationToken, Disposable, NotificationHandler, NotificationType, RequestType } from "vscode-jsonrpc";
import type { RpcConnection } from "../../src/client/connection";

export type WireEntry =
  | { kind: "request"; id: number; method: string; params: unknown }
  | { kind: "response"; id: number; method: string; result?: unknown; error?: { code: number; message: string; data?: unknown } }
  | { kind: "notification"; method: string; params: unknown };

export class RecordingConnection implements RpcConnection {
  readonly log: WireEntry[] = [];
  private nextId = 1;

  constructor(private readonly inner: RpcConnection) {}

  async sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P, token?: CancellationToken): Promise<R> {
    const id = this.nextId++;
    this.log.push({ kind: "request", id, method: type.method, params });
    try {
      const result = await this.inner.sendRequest(type, params, token);
      this.log.push({ kind: "response", id, method: type.method, result });
      return result;
    } catch (error) {
      const { code, message, data } = error as { code: number; message: string; data?: unknown };
      this.log.push({ kind: "response", id, method: type.method, error: { code, message, data } });
      throw error;
    }
  }

  onNotification<P>(type: NotificationType<P>, handler: NotificationHandler<P>): Disposable {
    return this.inner.onNotification(type, (params: P) => {
      this.log.push({ kind: "notification", method: type.method, params });
      handler(params);
    });
  }
}
