// Compile-time only (type-checked by `npm run typecheck`, never run): both transports satisfy the
// client's RpcConnection, the seam that lets the same client code run in VS Code and in Node tests.
import type { MessageConnection } from "vscode-jsonrpc/node";
import type { LanguageClient } from "vscode-languageclient/node";
import type { RpcConnection } from "../../src/client/connection";

export type LanguageClientIsAConnection = LanguageClient extends RpcConnection ? true : never;
export type MessageConnectionIsAConnection = MessageConnection extends RpcConnection ? true : never;
export const checks: [LanguageClientIsAConnection, MessageConnectionIsAConnection] = [true, true];
