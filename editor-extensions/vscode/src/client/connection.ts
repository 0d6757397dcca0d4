// The one seam between the protocol client and a transport. Both `LanguageClient`
// (vscode-languageclient, in the extension) and `MessageConnection` (vscode-jsonrpc, in tests and
// tools) satisfy it, so everything above it runs unchanged in VS Code and in plain Node.
import type {
  CancellationToken,
  Disposable,
  NotificationHandler,
  NotificationType,
  RequestType,
} from "vscode-jsonrpc";

export interface RpcConnection {
  sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P, token?: CancellationToken): Promise<R>;
  /** One handler per method (LanguageClient replaces an earlier one): register a single dispatcher. */
  onNotification<P>(type: NotificationType<P>, handler: NotificationHandler<P>): Disposable;
}
