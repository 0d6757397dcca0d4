// Typed requests and notifications over an RpcConnection, with the server's advertised features.
import { type CancellationToken, NotificationType, RequestType } from "vscode-jsonrpc";
import type { RpcConnection } from "./connection";
import { Emitter, type Disposable } from "./emitter";
import { isRecord, toProtocolError, type ProtocolError } from "../protocol/errors";
import type { NotificationMap, RequestMap } from "../protocol/generated";

export type Method = keyof RequestMap;
export type Params<M extends Method> = RequestMap[M]["params"];
export type Result<M extends Method> = RequestMap[M]["result"];
export type NotificationMethod = keyof NotificationMap;

/** Whether the runtime can run shell commands in its sandbox (bubblewrap), and why (not). */
export interface SandboxState {
  usable: boolean;
  reason: string;
}

/** What `initialize` advertised in `capabilities.experimental.openvaala` (PROTOCOL.md §1). */
export interface ServerFeatures {
  protocolVersion: string;
  serverVersion: string;
  methods: ReadonlySet<string>;
  notifications: ReadonlySet<string>;
  /** `capabilities.experimental.openvaala.sandbox` (schemas/README.md "Approvals"); absent from older servers. */
  sandbox?: SandboxState;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** Reads the openvaala capabilities from an `initialize` result (anything missing reads as empty). */
export function serverFeatures(initializeResult: unknown): ServerFeatures {
  const capabilities = isRecord(initializeResult) ? initializeResult.capabilities : undefined;
  const experimental = isRecord(capabilities) ? capabilities.experimental : undefined;
  const openvaala = isRecord(experimental) ? experimental.openvaala : undefined;
  const own = isRecord(openvaala) ? openvaala : {};
  const sandbox = isRecord(own.sandbox) && typeof own.sandbox.usable === "boolean" ? own.sandbox : undefined;
  return {
    protocolVersion: typeof own.protocolVersion === "string" ? own.protocolVersion : "",
    serverVersion: typeof own.serverVersion === "string" ? own.serverVersion : "",
    methods: new Set(strings(own.methods)),
    notifications: new Set(strings(own.notifications)),
    ...(sandbox
      ? { sandbox: { usable: sandbox.usable === true, reason: typeof sandbox.reason === "string" ? sandbox.reason : "" } }
      : {}),
  };
}

export interface FailedRequest {
  method: Method;
  error: ProtocolError;
}

export class OpenvaalaRpc implements Disposable {
  private readonly requestTypes = new Map<string, RequestType<unknown, unknown, unknown>>();
  private readonly notificationHandlers = new Map<string, Set<(params: never) => void>>();
  private readonly registrations: Disposable[] = [];
  private readonly failed = new Emitter<FailedRequest>();
  /** Every request that failed, e.g. with `runtimeStopped`: the client resubscribes on those. */
  readonly onDidFail = this.failed.event;

  constructor(
    private readonly connection: RpcConnection,
    private advertised: ServerFeatures,
  ) {}

  get features(): ServerFeatures {
    return this.advertised;
  }

  /** After the connection restarted: what the (possibly newer) server advertises now. */
  updateFeatures(features: ServerFeatures): void {
    this.advertised = features;
  }

  /** Whether the server answers `method` (a method it does not list answers methodNotFound). */
  supports(method: Method): boolean {
    return this.advertised.methods.has(method);
  }

  async request<M extends Method>(method: M, params: Params<M>, token?: CancellationToken): Promise<Result<M>> {
    let type = this.requestTypes.get(method);
    if (type === undefined) {
      type = new RequestType<unknown, unknown, unknown>(method);
      this.requestTypes.set(method, type);
    }
    try {
      return (await this.connection.sendRequest(type, params, token)) as Result<M>;
    } catch (raw) {
      const error = toProtocolError(raw);
      this.failed.fire({ method, error });
      throw error;
    }
  }

  /** Listens to a notification; any number of listeners share one registered dispatcher. */
  onNotification<N extends NotificationMethod>(method: N, handler: (params: NotificationMap[N]) => void): Disposable {
    let handlers = this.notificationHandlers.get(method);
    if (handlers === undefined) {
      const set = new Set<(params: never) => void>();
      handlers = set;
      this.notificationHandlers.set(method, set);
      const type = new NotificationType<NotificationMap[N]>(method);
      this.registrations.push(
        this.connection.onNotification(type, (params) => {
          for (const listener of [...set]) {
            try {
              (listener as (p: NotificationMap[N]) => void)(params);
            } catch (error) {
              console.error(`openvaala: a ${method} listener failed`, error);
            }
          }
        }),
      );
    }
    const entry = handler as (params: never) => void;
    handlers.add(entry);
    return { dispose: () => handlers.delete(entry) };
  }

  dispose(): void {
    for (const registration of this.registrations.splice(0)) registration.dispose();
    this.notificationHandlers.clear();
    this.failed.dispose();
  }
}
