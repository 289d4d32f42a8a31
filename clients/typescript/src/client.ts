import type { ExtensionCodecType } from "@msgpack/msgpack";
import { CallState, OutgoingCall } from "./call.js";
import { Connection, validateMetadata, type ConnectionOwner, type ConnectionSettings, type HandlerEntry, type MuxHandler } from "./connection.js";
import { MuxError, StatusCode } from "./errors.js";
import { methodId } from "./protocol.js";
import { openTransport, type WebSocketConstructor } from "./transport.js";

/** Where a client's connection is. */
export type MuxClientState = "connecting" | "connected" | "reconnecting" | "closed";

export interface MuxClientOptions {
  /** Sent in the Hello for a server that requires a token. */
  authToken?: string;
  /** The default deadline of a call made with `call`, in ms; 0 for none. Defaults to 30000. Streams have none unless a call sets one. */
  timeoutMs?: number;
  /** Reconnects with backoff after the connection is lost or the server goes away. Defaults to true. */
  reconnect?: boolean;
  /** The first wait between reconnect attempts (after an immediate first retry), doubled up to `reconnectMaxDelayMs`. Defaults to 100. */
  reconnectMinDelayMs?: number;
  /** The longest wait between reconnect attempts. Defaults to 5000. */
  reconnectMaxDelayMs?: number;
  /** How long opening a connection and its Hello exchange may take. Defaults to 10000. */
  connectTimeoutMs?: number;
  /** A Ping goes out when nothing has arrived for this long; 0 turns keepalive off. Defaults to 30000. */
  keepAliveIntervalMs?: number;
  /** The connection closes when nothing arrives within this long after a Ping. Defaults to 20000. */
  keepAliveTimeoutMs?: number;
  /** The largest frame this client accepts (announced in its Hello). Defaults to 4 MiB. */
  maxFrameSize?: number;
  /** The largest answer (all its fragments) this client accepts. Defaults to 64 MiB. */
  maxMessageSize?: number;
  /** Requests larger than this go in fragments. Defaults to 64 KiB. */
  fragmentSize?: number;
  /** The items of one server stream this client buffers (the credit the server starts with). Defaults to 64. */
  streamWindow?: number;
  /** The largest metadata section this client reads in a call from the server. Defaults to 8192. */
  maxMetadataSize?: number;
  /** Handlers of the calls the server makes to this client, by method name (`Namespace.IService.Method`). */
  handlers?: Record<string, MuxHandler>;
  /** Called on every change of `state`. */
  onStateChange?: (state: MuxClientState) => void;
  /** The WebSocket class to use; by default the global one, or the `ws` package's in a Node without one. */
  webSocket?: WebSocketConstructor;
  /** MessagePack extension types (for example a .NET type with a custom formatter). */
  extensionCodec?: ExtensionCodecType<undefined>;
  /** Reads 64-bit integers as bigint and writes bigints as 64-bit integers. Defaults to false (numbers). */
  useBigInt64?: boolean;
}

export interface MuxCallOptions {
  /** Aborting cancels the call: it rejects with a `MuxError` of `Canceled`, and the server's handler is cancelled. */
  signal?: AbortSignal;
  /** This call's deadline in ms (0: none), instead of the client's `timeoutMs`; sent to the server as the call's deadline. */
  timeoutMs?: number;
  /** String keys and values the handler reads as `MuxCallContext.Metadata`. */
  metadata?: Record<string, string>;
}

// Sizes and times are 32-bit signed on the wire and in the server's settings, so no option goes beyond that.
const MAX_INT32 = 0x7fffffff;

function positive(name: string, value: number | undefined, fallback: number, min = 1, max = MAX_INT32): number {
  if (value === undefined) {
    return fallback;
  }
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`The option ${name} is ${value}; it must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";
}

/**
 * A client of a Mux server over one connection (WebSocket, or TCP in Node). Many calls share it at
 * once; it reconnects with backoff when the connection is lost, and the server may call the handlers
 * registered with `handle`.
 */
export class MuxClient implements ConnectionOwner {
  /** Called on every change of `state`: "connecting", "connected", "reconnecting", "closed". */
  onStateChange: ((state: MuxClientState) => void) | null;
  readonly handlers = new Map<number, HandlerEntry>();
  private currentState: MuxClientState = "connecting";
  private readonly settings: ConnectionSettings;
  private readonly timeoutMs: number;
  private readonly reconnect: boolean;
  private readonly minDelay: number;
  private readonly maxDelay: number;
  private readonly connectTimeoutMs: number;
  private readonly webSocket: WebSocketConstructor | undefined;
  // The connection new calls go to; null while connecting, reconnecting, or after close.
  private connection: Connection | null = null;
  // Connections still finishing calls after a GoAway, and the current one: what close() must end.
  private readonly open = new Set<Connection>();
  // Calls not yet sent (no connection, or all of the server's call slots taken); `head` is the next.
  private queue: OutgoingCall[] = [];
  private head = 0;
  private connecting = false;
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private lastConnectError: unknown = null;
  private closing = false;
  private readonly methodIds = new Map<string, number>();

  private constructor(
    /** The server's address, as given to `connect`. */
    readonly url: string,
    options: MuxClientOptions,
  ) {
    this.settings = {
      authToken: options.authToken,
      maxFrameSize: positive("maxFrameSize", options.maxFrameSize, 4 * 1024 * 1024, 4096),
      maxMessageSize: positive("maxMessageSize", options.maxMessageSize, 64 * 1024 * 1024, 4096),
      fragmentSize: positive("fragmentSize", options.fragmentSize, 64 * 1024, 1024, 16 * 1024 * 1024),
      streamWindow: positive("streamWindow", options.streamWindow, 64, 1, 65536),
      maxMetadataSize: positive("maxMetadataSize", options.maxMetadataSize, 8192, 0),
      keepAliveIntervalMs: positive("keepAliveIntervalMs", options.keepAliveIntervalMs, 30000, 0),
      keepAliveTimeoutMs: positive("keepAliveTimeoutMs", options.keepAliveTimeoutMs, 20000, 1),
      extensionCodec: options.extensionCodec,
      useBigInt64: options.useBigInt64 ?? false,
    };
    this.timeoutMs = positive("timeoutMs", options.timeoutMs, 30000, 0);
    this.reconnect = options.reconnect ?? true;
    this.minDelay = positive("reconnectMinDelayMs", options.reconnectMinDelayMs, 100, 0);
    this.maxDelay = positive("reconnectMaxDelayMs", options.reconnectMaxDelayMs, 5000, 0);
    this.connectTimeoutMs = positive("connectTimeoutMs", options.connectTimeoutMs, 10000, 1);
    this.webSocket = options.webSocket;
    this.onStateChange = options.onStateChange ?? null;
    for (const [name, handler] of Object.entries(options.handlers ?? {})) {
      this.handle(name, handler);
    }
  }

  /**
   * Connects to a Mux server: `ws://host:port/path` or `wss://…` (browsers and Node), or `tcp://host:port`
   * (Node). Resolves once the server has accepted the Hello; rejects with a `MuxError` when it cannot.
   */
  static async connect(url: string, options: MuxClientOptions = {}): Promise<MuxClient> {
    const client = new MuxClient(url, options);
    client.setState("connecting");
    try {
      client.adopt(await client.openConnection());
    } catch (error) {
      client.closing = true;
      client.setState("closed");
      throw error;
    }
    return client;
  }

  /** Where the connection is. */
  get state(): MuxClientState {
    return this.currentState;
  }

  /**
   * Registers the handler of a method the server may call on this client (`Namespace.IService.Method`,
   * hashed as docs/protocol.md says). The handler gets the arguments as an array and a context with an
   * AbortSignal the server's Cancel aborts; its result (or a promise of it) is the answer, and a thrown
   * `MuxError` becomes that status.
   */
  handle(method: string, handler: MuxHandler): this {
    this.handlers.set(methodId(method), { method, handler });
    return this;
  }

  /**
   * Calls a method and resolves with its result. A `MuxError` rejects it when the server answers an
   * error, the deadline passes, the signal aborts or the connection is lost. An argument that is an
   * AsyncIterable is the method's stream argument: its items go to the server as they come.
   */
  call<T = unknown>(method: string, args: unknown[] = [], options?: MuxCallOptions): Promise<T> {
    let call: OutgoingCall;
    try {
      call = this.createCall(method, args, options, false, this.timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    this.submit(call);
    return call.promise as Promise<T>;
  }

  /**
   * Calls a method that returns a stream; read it with `for await`. Leaving the loop early, or aborting
   * the signal, cancels the call on the server. No deadline applies unless `timeoutMs` is set.
   */
  stream<T = unknown>(method: string, args: unknown[] = [], options?: MuxCallOptions): AsyncIterable<T> {
    let call: OutgoingCall;
    try {
      call = this.createCall(method, args, options, true, 0);
    } catch (error) {
      // The stream fails where it is read, as a stream that fails on the server does.
      return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }) };
    }
    this.submit(call);
    return call.results as AsyncIterable<T>;
  }

  /** Checks a call's arguments and options and makes it; throws what is wrong with them. */
  private createCall(method: string, args: unknown[], options: MuxCallOptions | undefined, expectsStream: boolean, defaultTimeout: number): OutgoingCall {
    let id = this.methodIds.get(method);
    if (id === undefined) {
      if (typeof method !== "string" || method.length === 0) {
        throw new TypeError("A method is named as Namespace.IService.Method.");
      }
      id = methodId(method);
      this.methodIds.set(method, id);
    }
    if (!Array.isArray(args)) {
      throw new TypeError(`The arguments of ${method} are an array, one element per parameter.`);
    }
    let source: AsyncIterable<unknown> | null = null;
    let plain = args;
    for (let i = 0; i < args.length; i++) {
      if (isAsyncIterable(args[i])) {
        if (source !== null) {
          throw new TypeError(`${method} was given two stream arguments; a method takes at most one.`);
        }
        source = args[i] as AsyncIterable<unknown>;
        plain = args.slice(0, i).concat(args.slice(i + 1));
      }
    }
    const timeoutMs = options?.timeoutMs ?? defaultTimeout;
    if (typeof timeoutMs !== "number" || !(timeoutMs >= 0) || timeoutMs > MAX_INT32) {
      throw new RangeError(`The timeoutMs of ${method} is ${timeoutMs}; it must be from 0 (none) to ${MAX_INT32}.`);
    }
    const signal = options?.signal ?? null;
    if (signal !== null && signal.aborted) {
      throw new MuxError(StatusCode.Canceled, `The call to ${method} was canceled before it started.`, { cause: signal.reason, notRun: true });
    }
    if (this.closing) {
      throw new MuxError(StatusCode.Unavailable, `The Mux client for ${this.url} is closed.`, { notRun: true });
    }
    const metadata = options?.metadata === undefined ? null : validateMetadata(options.metadata);
    const deadline = timeoutMs > 0 ? performance.now() + timeoutMs : Infinity;
    const call = new OutgoingCall(method, id, plain, source, expectsStream, deadline, timeoutMs, signal, this.whyNotSent);
    call.metadata = metadata;
    return call;
  }

  private readonly whyNotSent = (): string => {
    if (this.connection !== null) {
      return " waiting for one of the server's call slots";
    }
    const last = this.lastConnectError;
    return last === null ? " waiting for a connection" : ` waiting for a connection (the last attempt failed: ${(last as Error).message ?? last})`;
  };

  private submit(call: OutgoingCall): void {
    const connection = this.connection;
    if (this.head === this.queue.length && connection !== null && connection.canSend) {
      connection.send(call);
      return;
    }
    this.queue.push(call);
  }

  // Sends queued calls while the connection has call slots; calls given up on while queued are skipped.
  private pump(): void {
    const connection = this.connection;
    while (this.head < this.queue.length && connection !== null && connection.canSend) {
      const call = this.queue[this.head]!;
      this.queue[this.head++] = undefined!;
      if (call.state === CallState.Waiting) {
        connection.send(call);
      }
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** Closes the client: calls still running fail with a `MuxError` (`Unavailable`), and no reconnect follows. */
  async close(): Promise<void> {
    if (this.closing) {
      await Promise.all([...this.open].map((c) => c.whenClosed()));
      return;
    }
    this.closing = true;
    if (this.reconnectTimer !== undefined) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
    const error = new MuxError(StatusCode.Unavailable, `The Mux client for ${this.url} was closed.`, { notRun: true });
    const queued = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const call of queued) {
      call.fail(error, false);
    }
    const closedBySelf = new MuxError(StatusCode.Unavailable, `The connection to ${this.url} was closed by this client.`);
    this.connection = null;
    await Promise.all([...this.open].map((c) => c.closeGracefully(closedBySelf)));
    this.setState("closed");
  }

  // ---- connections -----------------------------------------------------------------------------

  private async openConnection(): Promise<Connection> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new MuxError(StatusCode.Unavailable, `Could not connect to the Mux server at ${this.url} within ${this.connectTimeoutMs} ms.`, { notRun: true }));
      }, this.connectTimeoutMs);
    });
    const attempt = (async () => {
      const transport = await openTransport(this.url, this.webSocket);
      if (timedOut) {
        transport.close(false);
        throw new Error("timed out");
      }
      return Connection.handshake(transport, this.settings, this, this.url);
    })();
    try {
      return await Promise.race([attempt, timeout]);
    } catch (error) {
      // A handshake that completes after the timeout is closed at once.
      attempt.then((c) => c.close(error as MuxError), () => {});
      if (error instanceof MuxError) {
        throw error;
      }
      throw new MuxError(StatusCode.Unavailable, `Could not connect to the Mux server at ${this.url}: ${(error as Error).message}`, { cause: error, notRun: true });
    } finally {
      clearTimeout(timer);
    }
  }

  private adopt(connection: Connection): void {
    if (this.closing) {
      void connection.closeGracefully(new MuxError(StatusCode.Unavailable, `The Mux client for ${this.url} was closed.`));
      return;
    }
    this.open.add(connection);
    this.connection = connection;
    this.attempt = 0;
    this.lastConnectError = null;
    this.setState("connected");
    this.pump();
  }

  private setState(state: MuxClientState): void {
    if (this.currentState === state && state !== "connecting") {
      return;
    }
    this.currentState = state;
    try {
      this.onStateChange?.(state);
    } catch {
      // A listener's fault must not break the client's own bookkeeping.
    }
  }

  private startReconnect(): void {
    if (this.closing || this.connecting || this.connection !== null || this.reconnectTimer !== undefined) {
      return;
    }
    if (!this.reconnect) {
      this.closing = true;
      const error = new MuxError(StatusCode.Unavailable, `The connection to the Mux server at ${this.url} closed, and this client does not reconnect.`, { notRun: true, cause: this.lastConnectError });
      const queued = this.queue.slice(this.head);
      this.queue = [];
      this.head = 0;
      for (const call of queued) {
        call.fail(error, false);
      }
      this.setState("closed");
      return;
    }
    this.setState("reconnecting");
    // The first retry goes at once (a restarted server is often back already); then the wait doubles, with jitter.
    const base = this.attempt === 0 ? 0 : Math.min(this.maxDelay, this.minDelay * 2 ** (this.attempt - 1));
    const delay = base * (0.8 + Math.random() * 0.4);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.tryReconnect();
    }, delay);
  }

  private async tryReconnect(): Promise<void> {
    if (this.closing || this.connection !== null) {
      return;
    }
    this.connecting = true;
    try {
      const connection = await this.openConnection();
      this.connecting = false;
      this.adopt(connection);
    } catch (error) {
      this.connecting = false;
      this.lastConnectError = error;
      this.attempt++;
      this.startReconnect();
    }
  }

  // ---- ConnectionOwner -------------------------------------------------------------------------

  /** @internal */
  connectionClosed(connection: Connection, _error: MuxError): void {
    this.open.delete(connection);
    if (connection === this.connection) {
      this.connection = null;
      this.startReconnect();
    }
  }

  /** @internal */
  connectionDraining(connection: Connection): void {
    if (connection === this.connection) {
      this.connection = null;
      this.startReconnect();
    }
  }

  /** @internal */
  slotFreed(connection: Connection): void {
    if (connection === this.connection && this.head < this.queue.length) {
      this.pump();
    }
  }

  /** @internal */
  notRun(call: OutgoingCall, error: MuxError): void {
    // Sent again only when nothing of it can have been used up: no argument stream, no item read yet.
    if (call.source === null && call.resends < 3 && (call.results === null || call.results.buffered === 0)) {
      call.resends++;
      call.state = CallState.Waiting;
      call.link = null;
      call.id = 0;
      this.queue.splice(this.head, 0, call);
      this.pump();
      return;
    }
    call.fail(error, false);
  }
}
