import { Decoder, Encoder, type ExtensionCodecType } from "@msgpack/msgpack";
import { CallState, type CallLink, type OutgoingCall } from "./call.js";
import { MuxError, StatusCode, statusName } from "./errors.js";
import {
  Flags,
  FrameReader,
  FrameType,
  HANDSHAKE_FRAME_SIZE,
  HEADER_SIZE,
  MAGIC,
  PROTOCOL_VERSION,
  ProtocolViolation,
  Reassembly,
  fragmentedSize,
  readFirstFragmentTotal,
  readU32,
  writeFragments,
  writeHeader,
  writeU32,
  type FrameView,
} from "./protocol.js";
import type { Transport } from "./transport.js";

/** What a handler of a call from the server gets besides its arguments. */
export interface MuxHandlerContext {
  /** The method's name, as registered. */
  readonly method: string;
  /** Aborted when the server cancels the call or the connection closes. */
  readonly signal: AbortSignal;
  /** The metadata the server sent with the call (empty when none). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Serves one method of the client's services to the server: its arguments as an array, its result as the answer. */
export type MuxHandler = (args: unknown[], context: MuxHandlerContext) => unknown;

export interface HandlerEntry {
  readonly method: string;
  readonly handler: MuxHandler;
}

/** The settings a connection runs with, resolved from the client's options. */
export interface ConnectionSettings {
  authToken: string | undefined;
  maxFrameSize: number;
  maxMessageSize: number;
  fragmentSize: number;
  streamWindow: number;
  maxMetadataSize: number;
  keepAliveIntervalMs: number;
  keepAliveTimeoutMs: number;
  extensionCodec: ExtensionCodecType<undefined> | undefined;
  useBigInt64: boolean;
}

/** What a connection tells the client that owns it. */
export interface ConnectionOwner {
  readonly handlers: Map<number, HandlerEntry>;
  /** The connection closed; `error` says why (its calls have been failed already). */
  connectionClosed(connection: Connection, error: MuxError): void;
  /** The connection takes no new call (GoAway, or its ids ran out); open another. */
  connectionDraining(connection: Connection): void;
  /** A call slot freed on the connection. */
  slotFreed(connection: Connection): void;
  /** A GoAway said the server never ran this call; the client sends it again or fails it. */
  notRun(call: OutgoingCall, error: MuxError): void;
}

/** What the server's HelloAck settled. */
interface PeerSettings {
  maxFrameSize: number;
  maxConcurrentCalls: number;
  streamWindow: number;
  maxMessageSize: number;
  cancelEndsFragments: boolean;
  /** -1 when the server reads no metadata. */
  maxMetadataSize: number;
}

// A call the server started and a handler of this client runs.
interface ServerCall {
  readonly controller: AbortController;
}

const MAX_CALL_ID = 0xffffffff;
const flushSoon: (f: () => void) => void =
  typeof setImmediate === "function" ? (f) => void setImmediate(f) : (f) => queueMicrotask(f);
const noMetadata: Readonly<Record<string, string>> = Object.freeze({});

/**
 * One Mux connection: the Hello exchange, the calls sent on it, the calls the server makes to this
 * client, keepalive and GoAway. Everything runs on the one JavaScript thread: a frame is handled to
 * the end before the next is read, so no state here needs a lock.
 */
export class Connection implements CallLink {
  // One encoder and decoder for the connection's life: encodeSharedRef's bytes are copied into the
  // output buffer before the next encode.
  readonly encoder: Encoder<undefined>;
  readonly decoder: Decoder<undefined>;
  private readonly reader = new FrameReader();
  // Frames written and not yet handed to the transport; flushed once per turn of the event loop.
  private out = new Uint8Array(64 * 1024);
  private outLength = 0;
  private flushScheduled = false;
  private readonly flush = () => this.flushNow();

  private peer: PeerSettings | null = null;
  private handshake: { resolve: () => void; reject: (e: unknown) => void } | null = null;
  /** The calls sent and not yet answered, by id, including calls their callers gave up on. */
  readonly calls = new Map<number, OutgoingCall>();
  private nextId = 1;
  private readonly serverCalls = new Map<number, ServerCall>();
  // Messages arriving in fragments: key id * 2 for the client's calls, id * 2 + 1 for the server's.
  private readonly reassemblies = new Map<number, Reassembly>();

  private closed = false;
  /** True once the connection takes no new call (GoAway received, or call ids ran out). */
  draining = false;
  private closeError: MuxError | null = null;
  private closedWaiters: (() => void)[] = [];

  private lastReceived = performance.now();
  private pingSentAt = 0;
  private keepAliveTimer: ReturnType<typeof setTimeout> | undefined;

  private constructor(
    private readonly transport: Transport,
    private readonly settings: ConnectionSettings,
    private readonly owner: ConnectionOwner,
    readonly url: string,
  ) {
    const codecOptions = { extensionCodec: settings.extensionCodec, useBigInt64: settings.useBigInt64 };
    this.encoder = new Encoder(codecOptions);
    this.decoder = new Decoder(codecOptions);
    transport.onData = (chunk) => this.onData(chunk);
    transport.onClose = (error) => this.onTransportClosed(error);
  }

  /** Runs the Hello exchange on an open transport; resolves once the server's HelloAck has been read. */
  static async handshake(transport: Transport, settings: ConnectionSettings, owner: ConnectionOwner, url: string): Promise<Connection> {
    const connection = new Connection(transport, settings, owner, url);
    await new Promise<void>((resolve, reject) => {
      connection.handshake = { resolve, reject };
      connection.sendHello();
    });
    return connection;
  }

  /** Whether a call can be sent now: open, not draining, under the server's maxConcurrentCalls. */
  get canSend(): boolean {
    return !this.draining && !this.closed && this.calls.size < this.peer!.maxConcurrentCalls;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  // ---- writing -------------------------------------------------------------------------------

  private reserve(size: number): number {
    const offset = this.outLength;
    const needed = offset + size;
    if (needed > this.out.length) {
      const grown = new Uint8Array(Math.max(needed, this.out.length * 2));
      grown.set(this.out.subarray(0, offset), 0);
      this.out = grown;
    }
    this.outLength = needed;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      flushSoon(this.flush);
    }
    return offset;
  }

  private flushNow(): void {
    this.flushScheduled = false;
    if (this.outLength === 0 || this.closed) {
      this.outLength = 0;
      return;
    }
    // The transport may keep what it is given until written, so it gets a copy and the buffer is reused.
    this.transport.send(this.out.slice(0, this.outLength));
    this.outLength = 0;
    if (this.out.length > 1024 * 1024) {
      this.out = new Uint8Array(64 * 1024);
    }
  }

  private writeEmpty(type: number, flags: number, callId: number): void {
    const o = this.reserve(HEADER_SIZE);
    writeHeader(this.out, o, type, flags, callId, 0);
  }

  private writeU32Frame(type: number, flags: number, callId: number, value: number): void {
    const o = this.reserve(HEADER_SIZE + 4);
    writeHeader(this.out, o, type, flags, callId, 4);
    writeU32(this.out, o + HEADER_SIZE, value);
  }

  /** Writes a message (bytes after the common header), in fragments when it is larger than the fragment size. */
  private writeMessage(type: number, flags: number, callId: number, message: Uint8Array): void {
    const fragmentSize = this.fragmentSize;
    if (message.length <= fragmentSize) {
      const o = this.reserve(HEADER_SIZE + message.length);
      writeHeader(this.out, o, type, flags, callId, message.length);
      this.out.set(message, o + HEADER_SIZE);
      return;
    }
    const o = this.reserve(fragmentedSize(message.length, fragmentSize));
    writeFragments(this.out, o, type, flags, callId, message, fragmentSize);
  }

  private get fragmentSize(): number {
    const peerFrame = this.peer === null ? HANDSHAKE_FRAME_SIZE : this.peer.maxFrameSize;
    return Math.min(this.settings.fragmentSize, peerFrame - 10);
  }

  private sendHello(): void {
    const settings: Record<string, unknown> = {
      maxFrameSize: this.settings.maxFrameSize,
      maxMessageSize: this.settings.maxMessageSize,
      streamWindow: this.settings.streamWindow,
      maxMetadataSize: this.settings.maxMetadataSize,
      cancelEndsFragments: true,
    };
    if (this.settings.authToken !== undefined) {
      settings.authToken = this.settings.authToken;
    }
    const body = this.encoder.encodeSharedRef(settings);
    const o = this.reserve(HEADER_SIZE + 6 + body.length);
    writeHeader(this.out, o, FrameType.Hello, 0, 0, 6 + body.length);
    this.out.set(MAGIC, o + HEADER_SIZE);
    this.out[o + HEADER_SIZE + 4] = PROTOCOL_VERSION & 0xff;
    this.out[o + HEADER_SIZE + 5] = PROTOCOL_VERSION >>> 8;
    this.out.set(body, o + HEADER_SIZE + 6);
    this.flushNow();
  }

  /**
   * Sends a call's Request: assigns its id, adds the deadline header (what is left of the caller's
   * deadline now) and the metadata section, and splits it into fragments when it is large.
   */
  send(call: OutgoingCall): void {
    const peer = this.peer!;
    const now = performance.now();
    let flags = 0;
    let deadlineMs = 0;
    if (call.deadline !== Infinity) {
      const left = Math.ceil(call.deadline - now);
      if (left <= 0) {
        call.onTimeout();
        return;
      }
      flags |= Flags.Deadline;
      deadlineMs = Math.min(left, MAX_CALL_ID);
    }
    let metadata: Uint8Array | null = null;
    if (call.metadata !== null && peer.maxMetadataSize >= 0) {
      metadata = this.encoder.encode(call.metadata);
      if (metadata.length > peer.maxMetadataSize) {
        call.fail(
          new MuxError(StatusCode.MessageTooLarge, `The metadata of the call to ${call.method} is ${metadata.length} bytes, over the server's maxMetadataSize of ${peer.maxMetadataSize} bytes; it was not sent.`, { notRun: true }),
          false,
        );
        return;
      }
      flags |= Flags.Metadata;
    }
    const args = this.encoder.encodeSharedRef(call.args);
    const headerSize = 4 + (flags & Flags.Deadline ? 4 : 0) + (metadata !== null ? 4 + metadata.length : 0);
    const size = headerSize + args.length;
    if (size > peer.maxMessageSize) {
      call.fail(
        new MuxError(StatusCode.MessageTooLarge, `The request of ${call.method} is ${size} bytes, over the server's maxMessageSize of ${peer.maxMessageSize} bytes; it was not sent.`, { notRun: true }),
        false,
      );
      return;
    }
    if (this.nextId > MAX_CALL_ID) {
      this.startDraining();
      this.owner.notRun(call, new MuxError(StatusCode.Unavailable, "The connection ran out of call ids.", { notRun: true }));
      return;
    }
    const id = this.nextId++;
    call.id = id;
    call.link = this;
    call.state = CallState.Sent;
    this.calls.set(id, call);
    const fragmentSize = this.fragmentSize;
    let message: Uint8Array;
    let o: number;
    if (size <= fragmentSize) {
      // The usual case: the frame is written straight into the output buffer.
      o = this.reserve(HEADER_SIZE + size);
      writeHeader(this.out, o, FrameType.Request, flags, id, size);
      message = this.out;
      o += HEADER_SIZE;
    } else {
      message = new Uint8Array(size);
      o = 0;
    }
    writeU32(message, o, call.methodId);
    o += 4;
    if (flags & Flags.Deadline) {
      writeU32(message, o, deadlineMs);
      o += 4;
    }
    if (metadata !== null) {
      writeU32(message, o, metadata.length);
      message.set(metadata, o + 4);
      o += 4 + metadata.length;
    }
    message.set(args, o);
    if (message !== this.out) {
      this.writeMessage(FrameType.Request, flags, id, message);
    }
    if (call.results !== null) {
      call.results.window = this.settings.streamWindow;
    }
    if (call.source !== null) {
      // Stream items follow the whole Request in the output buffer, so none can overtake it.
      call.startProducer(peer.streamWindow);
    }
  }

  cancel(call: OutgoingCall): void {
    if (!this.closed && this.calls.get(call.id) === call) {
      this.writeEmpty(FrameType.Cancel, 0, call.id);
    }
  }

  grantCredit(call: OutgoingCall, count: number): void {
    if (!this.closed && this.calls.get(call.id) === call) {
      this.writeU32Frame(FrameType.StreamCredit, 0, call.id, count);
    }
  }

  sendItem(call: OutgoingCall, item: unknown): void {
    if (this.closed || this.calls.get(call.id) !== call) {
      return;
    }
    const body = this.encoder.encodeSharedRef(item);
    // A stream item is never sent in fragments: it must fit one of the server's frames.
    if (body.length + 6 > this.peer!.maxFrameSize) {
      throw new MuxError(StatusCode.FrameTooLarge, `An item of ${call.method}'s stream is ${body.length} bytes, more than one of the server's frames holds (maxFrameSize ${this.peer!.maxFrameSize}).`);
    }
    const o = this.reserve(HEADER_SIZE + body.length);
    writeHeader(this.out, o, FrameType.StreamItem, 0, call.id, body.length);
    this.out.set(body, o + HEADER_SIZE);
  }

  sendStreamEnd(call: OutgoingCall, failure: [number, string] | null): void {
    if (this.closed || this.calls.get(call.id) !== call) {
      return;
    }
    if (failure === null) {
      this.writeEmpty(FrameType.StreamEnd, 0, call.id);
      return;
    }
    const body = this.encoder.encodeSharedRef([failure[0], failure[1], null]);
    const o = this.reserve(HEADER_SIZE + body.length);
    writeHeader(this.out, o, FrameType.StreamEnd, 0, call.id, body.length);
    this.out.set(body, o + HEADER_SIZE);
  }

  // ---- reading -------------------------------------------------------------------------------

  private readonly onFrame = (f: FrameView) => this.handleFrame(f);

  private onData(chunk: Uint8Array): void {
    if (this.closed) {
      return;
    }
    this.lastReceived = performance.now();
    try {
      this.reader.push(chunk, this.onFrame);
    } catch (error) {
      this.close(error instanceof ProtocolViolation
        ? new MuxError(StatusCode.ProtocolError, `The Mux server at ${this.url} broke the protocol: ${error.message}`, { cause: error })
        : new MuxError(StatusCode.Unavailable, `The connection to ${this.url} failed: ${(error as Error).message}`, { cause: error }));
    }
  }

  private handleFrame(f: FrameView): void {
    if (this.closed) {
      return;
    }
    if (this.peer === null) {
      this.handleHandshakeFrame(f);
      return;
    }
    const serverInitiated = (f.flags & Flags.ServerInitiated) !== 0;
    switch (f.type) {
      case FrameType.Response:
      case FrameType.Error:
        if (f.callId === 0) {
          if (f.type === FrameType.Error && f.flags === 0) {
            const [code, message] = this.readError(f.bytes.subarray(f.start, f.end));
            this.close(new MuxError(code, `The Mux server at ${this.url} closed the connection (${statusName(code)}): ${message}`));
            return;
          }
          throw new ProtocolViolation("A Response with call id 0.");
        }
        if (serverInitiated || (f.flags & ~Flags.MoreFragments) !== 0) {
          throw new ProtocolViolation(`A ${f.type === FrameType.Response ? "Response" : "Error"} with flags 0x${f.flags.toString(16)}.`);
        }
        if (this.reassemblies.has(f.callId * 2)) {
          throw new ProtocolViolation(`A new answer for call ${f.callId} while its answer was still arriving in fragments.`);
        }
        if (f.flags & Flags.MoreFragments) {
          this.startAnswerFragments(f);
          return;
        }
        this.answer(f.type, f.callId, f.bytes, f.start, f.end);
        return;
      case FrameType.Continuation:
        this.handleContinuation(f, serverInitiated);
        return;
      case FrameType.StreamItem:
        this.handleStreamItem(f, serverInitiated);
        return;
      case FrameType.StreamCredit: {
        if (f.end - f.start !== 4 || f.callId === 0 || serverInitiated || f.flags !== 0) {
          throw new ProtocolViolation("A malformed StreamCredit.");
        }
        const call = this.calls.get(f.callId);
        if (call !== undefined && call.state === CallState.Sent && call.source !== null) {
          call.addCredit(readU32(f.bytes, f.start));
        }
        return;
      }
      case FrameType.Request:
        if (!serverInitiated || f.callId === 0 || (f.flags & ~(Flags.ServerInitiated | Flags.MoreFragments | Flags.Deadline | Flags.TraceContext | Flags.Metadata)) !== 0) {
          throw new ProtocolViolation(`A Request with flags 0x${f.flags.toString(16)} and call id ${f.callId}: a server's Request carries ServerInitiated.`);
        }
        if (this.reassemblies.has(f.callId * 2 + 1) || this.serverCalls.has(f.callId)) {
          throw new ProtocolViolation(`A Request for server call ${f.callId}, which is still running or arriving.`);
        }
        if (f.flags & Flags.MoreFragments) {
          this.startRequestFragments(f);
          return;
        }
        this.serveRequest(f.flags, f.callId, f.bytes, f.start, f.end);
        return;
      case FrameType.Cancel:
        if (!serverInitiated || f.flags !== Flags.ServerInitiated || f.end !== f.start || f.callId === 0) {
          throw new ProtocolViolation("A Cancel without ServerInitiated, or with a body.");
        }
        this.cancelServerCall(f.callId);
        return;
      case FrameType.Ping:
        if (f.end - f.start !== 8 || f.flags !== 0) {
          throw new ProtocolViolation("A Ping whose body is not 8 bytes.");
        }
        {
          const o = this.reserve(HEADER_SIZE + 8);
          writeHeader(this.out, o, FrameType.Pong, 0, f.callId, 8);
          this.out.set(f.bytes.subarray(f.start, f.end), o + HEADER_SIZE);
        }
        return;
      case FrameType.Pong:
        if (f.end - f.start !== 8 || f.flags !== 0) {
          throw new ProtocolViolation("A Pong whose body is not 8 bytes.");
        }
        return;
      case FrameType.GoAway:
        if (f.end - f.start !== 4 || f.callId !== 0 || f.flags !== 0) {
          throw new ProtocolViolation("A malformed GoAway.");
        }
        this.goAway(readU32(f.bytes, f.start));
        return;
      default:
        throw new ProtocolViolation(`A frame of type ${f.type}, which a client does not accept.`);
    }
  }

  private handleHandshakeFrame(f: FrameView): void {
    if (f.type === FrameType.Error && f.callId === 0) {
      const [code, message] = this.readError(f.bytes.subarray(f.start, f.end));
      this.close(new MuxError(code, `The Mux server at ${this.url} refused the connection (${statusName(code)}): ${message}`));
      return;
    }
    if (f.type !== FrameType.HelloAck || f.callId !== 0 || f.flags !== 0 || f.end - f.start < 6) {
      throw new ProtocolViolation(`The server's first frame was of type ${f.type}, not a HelloAck.`);
    }
    const b = f.bytes;
    for (let i = 0; i < 4; i++) {
      if (b[f.start + i] !== MAGIC[i]) {
        throw new ProtocolViolation("The server's HelloAck does not start with the magic MUX1.");
      }
    }
    const version = b[f.start + 4]! | (b[f.start + 5]! << 8);
    if (version !== PROTOCOL_VERSION) {
      this.close(new MuxError(StatusCode.ProtocolError, `The server answered with protocol version ${version}; this client speaks version ${PROTOCOL_VERSION}.`));
      return;
    }
    const map = (f.end - f.start > 6 ? this.decoder.decode(b.subarray(f.start + 6, f.end)) : {}) as Record<string, unknown>;
    const int = (key: string, fallback: number) => (typeof map[key] === "number" ? (map[key] as number) : fallback);
    this.peer = {
      maxFrameSize: Math.max(HANDSHAKE_FRAME_SIZE, int("maxFrameSize", HANDSHAKE_FRAME_SIZE)),
      maxConcurrentCalls: Math.max(1, int("maxConcurrentCalls", Number.MAX_SAFE_INTEGER)),
      streamWindow: Math.max(1, int("streamWindow", 64)),
      maxMessageSize: int("maxMessageSize", Number.MAX_SAFE_INTEGER),
      cancelEndsFragments: map.cancelEndsFragments === true,
      // A server that announced no maxMetadataSize, or 0, reads no metadata: its calls go without the section.
      maxMetadataSize: typeof map.maxMetadataSize === "number" && map.maxMetadataSize > 0 ? map.maxMetadataSize : -1,
    };
    this.reader.maxFrameSize = this.settings.maxFrameSize;
    this.scheduleKeepAlive(this.settings.keepAliveIntervalMs);
    const handshake = this.handshake!;
    this.handshake = null;
    handshake.resolve();
  }

  private readError(body: Uint8Array): [number, string, string | null] {
    try {
      const value = this.decoder.decode(body) as unknown[];
      if (Array.isArray(value) && typeof value[0] === "number") {
        return [value[0], typeof value[1] === "string" ? value[1] : "", typeof value[2] === "string" ? value[2] : null];
      }
    } catch {
      // Reported below as an unreadable error.
    }
    return [StatusCode.ProtocolError, "The server sent an Error whose body could not be read.", null];
  }

  /** A Response or Error (whole, or reassembled) for a call of this client. */
  private answer(type: number, callId: number, bytes: Uint8Array, start: number, end: number): void {
    const call = this.calls.get(callId);
    if (call === undefined) {
      return; // An answer for a call already answered cannot come; one for a call cancelled is dropped.
    }
    this.calls.delete(callId);
    if (call.state === CallState.Sent) {
      if (type === FrameType.Response) {
        let value: unknown;
        try {
          value = this.decoder.decode(bytes.subarray(start, end));
        } catch (error) {
          value = new MuxError(StatusCode.InvalidArguments, `The response of ${call.method} could not be read: ${(error as Error).message}`, { cause: error });
          call.fail(value, false);
        }
        call.complete(value);
      } else {
        const [code, message, remoteType] = this.readError(bytes.subarray(start, end));
        if (code === StatusCode.DeadlineExceeded && call.deadline !== Infinity) {
          call.onTimeout(message);
        }
        call.fail(new MuxError(code, message, { remoteType, notRun: code === StatusCode.TooManyCalls || code === StatusCode.ServerShuttingDown }), false);
      }
    }
    this.afterSlotFreed();
  }

  private afterSlotFreed(): void {
    if (this.draining) {
      this.closeIfDrained();
    } else {
      this.owner.slotFreed(this);
    }
  }

  private startAnswerFragments(f: FrameView): void {
    const total = readFirstFragmentTotal(f);
    const drop = total > this.settings.maxMessageSize;
    const r = new Reassembly(f.type, 0, total, drop);
    r.add(f.bytes, f.start + 4, f.end);
    this.reassemblies.set(f.callId * 2, r);
    if (drop) {
      // Only this call fails; the rest of its answer is counted and dropped as it arrives.
      const call = this.calls.get(f.callId);
      call?.fail(new MuxError(StatusCode.MessageTooLarge, `The answer of ${call.method} is ${total} bytes, over this client's maxMessageSize of ${this.settings.maxMessageSize} bytes.`), false);
    }
  }

  private startRequestFragments(f: FrameView): void {
    const total = readFirstFragmentTotal(f);
    const drop = total > this.settings.maxMessageSize;
    const r = new Reassembly(FrameType.Request, f.flags & ~Flags.MoreFragments, total, drop);
    r.add(f.bytes, f.start + 4, f.end);
    this.reassemblies.set(f.callId * 2 + 1, r);
    if (drop) {
      this.writeServerError(f.callId, StatusCode.MessageTooLarge, `The server's request is ${total} bytes, over this client's maxMessageSize of ${this.settings.maxMessageSize} bytes.`);
    }
  }

  private handleContinuation(f: FrameView, serverInitiated: boolean): void {
    if (f.callId === 0 || (f.flags & ~(Flags.MoreFragments | Flags.ServerInitiated)) !== 0) {
      throw new ProtocolViolation(`A Continuation with flags 0x${f.flags.toString(16)} and call id ${f.callId}.`);
    }
    const key = f.callId * 2 + (serverInitiated ? 1 : 0);
    const r = this.reassemblies.get(key);
    if (r === undefined) {
      throw new ProtocolViolation(`A Continuation for ${serverInitiated ? "server " : ""}call ${f.callId}, which has no message in fragments.`);
    }
    r.add(f.bytes, f.start, f.end);
    if (f.flags & Flags.MoreFragments) {
      return;
    }
    if (!r.complete) {
      throw new ProtocolViolation(`The last fragment of call ${f.callId} ended at ${r.received} of the announced ${r.total} bytes.`);
    }
    this.reassemblies.delete(key);
    if (serverInitiated) {
      if (r.buffer !== null) {
        this.serveRequest(r.flags, f.callId, r.buffer, 0, r.total);
      }
    } else if (r.buffer !== null) {
      this.answer(r.type, f.callId, r.buffer, 0, r.total);
    } else if (this.calls.delete(f.callId)) {
      this.afterSlotFreed();
    }
  }

  private handleStreamItem(f: FrameView, serverInitiated: boolean): void {
    if (serverInitiated || f.callId === 0 || f.flags !== 0) {
      // This client does not announce serverCallStreams, so the server sends it no stream frames of its own calls.
      throw new ProtocolViolation(`A StreamItem with flags 0x${f.flags.toString(16)} and call id ${f.callId}.`);
    }
    const call = this.calls.get(f.callId);
    if (call === undefined || call.state !== CallState.Sent) {
      return; // Items on their way when the call ended are ignored.
    }
    const results = call.results;
    if (results === null) {
      throw new ProtocolViolation(`A StreamItem for call ${f.callId} to ${call.method}, which returns no stream.`);
    }
    if (results.buffered >= this.settings.streamWindow) {
      throw new ProtocolViolation(`The server sent more items of call ${f.callId}'s stream than its credit of ${this.settings.streamWindow}.`);
    }
    results.push(f.bytes.slice(f.start, f.end), this.decoder);
  }

  // ---- calls from the server ---------------------------------------------------------------------

  private serveRequest(flags: number, callId: number, bytes: Uint8Array, start: number, end: number): void {
    if (end - start < 4) {
      throw new ProtocolViolation("A Request shorter than its method id.");
    }
    const id = readU32(bytes, start);
    let o = start + 4;
    if (flags & Flags.Deadline) {
      o += 4;
    }
    if (flags & Flags.TraceContext) {
      if (o + 1 > end) throw new ProtocolViolation("A trace-context header runs past its frame.");
      o += 1 + bytes[o]!;
      if (o + 2 > end) throw new ProtocolViolation("A trace-context header runs past its frame.");
      o += 2 + (bytes[o]! | (bytes[o + 1]! << 8));
    }
    if (o > end) {
      throw new ProtocolViolation("A Request's headers run past its frame.");
    }
    const entry = this.owner.handlers.get(id);
    if (entry === undefined) {
      this.writeServerError(callId, StatusCode.UnknownMethod, `The client does not serve method id 0x${id.toString(16).padStart(8, "0")}: no handler was registered for it with MuxClient.handle.`);
      return;
    }
    let metadata: Readonly<Record<string, string>> = noMetadata;
    let args: unknown;
    try {
      if (flags & Flags.Metadata) {
        if (o + 4 > end) throw new Error("fewer than 4 bytes after the headers");
        const m = readU32(bytes, o);
        if (m > this.settings.maxMetadataSize) {
          this.writeServerError(callId, StatusCode.MessageTooLarge, `The metadata of the server's call to ${entry.method} is ${m} bytes, over this client's maxMetadataSize of ${this.settings.maxMetadataSize} bytes.`);
          return;
        }
        if (o + 4 + m > end) throw new Error(`a section of ${m} bytes where ${end - o - 4} follow`);
        metadata = readMetadata(this.decoder.decode(bytes.subarray(o + 4, o + 4 + m)));
        o += 4 + m;
      }
    } catch (error) {
      this.writeServerError(callId, StatusCode.InvalidArguments, `The metadata of the call to ${entry.method} could not be read: ${(error as Error).message}`);
      return;
    }
    try {
      args = this.decoder.decode(bytes.subarray(o, end));
    } catch (error) {
      args = error;
    }
    if (!Array.isArray(args)) {
      this.writeServerError(callId, StatusCode.InvalidArguments, `The arguments of the server's call to ${entry.method} are not a MessagePack array.`);
      return;
    }
    const call: ServerCall = { controller: new AbortController() };
    this.serverCalls.set(callId, call);
    const context: MuxHandlerContext = { method: entry.method, signal: call.controller.signal, metadata };
    // The handler runs after this frame's turn, never inside the reader.
    Promise.resolve()
      .then(() => {
        // A Cancel that came before the handler's turn means it never runs.
        if (call.controller.signal.aborted) {
          throw new MuxError(StatusCode.Canceled, `The server canceled its call to ${entry.method} before it ran.`);
        }
        return entry.handler(args as unknown[], context);
      })
      .then(
        (result) => this.answerServerCall(callId, call, entry.method, result, null),
        (error: unknown) => this.answerServerCall(callId, call, entry.method, undefined, error),
      );
  }

  private answerServerCall(callId: number, call: ServerCall, method: string, result: unknown, error: unknown): void {
    if (this.serverCalls.get(callId) !== call) {
      return;
    }
    this.serverCalls.delete(callId);
    if (this.closed) {
      return;
    }
    if (error !== null) {
      if (error instanceof MuxError) {
        this.writeServerError(callId, error.statusCode, error.message);
      } else if (call.controller.signal.aborted) {
        this.writeServerError(callId, StatusCode.Canceled, `${method} was canceled.`);
      } else {
        this.writeServerError(callId, StatusCode.HandlerFailed, error instanceof Error ? error.message : String(error), error instanceof Error ? error.name : null);
      }
    } else {
      let body: Uint8Array;
      try {
        body = this.encoder.encodeSharedRef(result === undefined ? null : result);
      } catch (e) {
        this.writeServerError(callId, StatusCode.HandlerFailed, `The result of ${method} could not be written as MessagePack: ${(e as Error).message}`);
        this.closeIfDrained();
        return;
      }
      if (body.length > this.peer!.maxMessageSize) {
        this.writeServerError(callId, StatusCode.MessageTooLarge, `The result of ${method} is ${body.length} bytes, over the server's maxMessageSize of ${this.peer!.maxMessageSize} bytes.`);
      } else {
        this.writeMessage(FrameType.Response, Flags.ServerInitiated, callId, body);
      }
    }
    this.closeIfDrained();
  }

  private writeServerError(callId: number, code: number, message: string, remoteType: string | null = null): void {
    const body = this.encoder.encode([code, message, remoteType]);
    this.writeMessage(FrameType.Error, Flags.ServerInitiated, callId, body);
  }

  private cancelServerCall(callId: number): void {
    const key = callId * 2 + 1;
    const r = this.reassemblies.get(key);
    if (r !== undefined) {
      // A Cancel of a Request still arriving in fragments ends it there: it never runs, and is answered Canceled.
      if (r.buffer !== null) {
        this.writeServerError(callId, StatusCode.Canceled, "The server canceled its call before its request had arrived.");
      }
      if (this.peer!.cancelEndsFragments) {
        this.reassemblies.delete(key);
      } else {
        this.reassemblies.set(key, new Reassembly(r.type, r.flags, r.total - r.received, true));
      }
      return;
    }
    this.serverCalls.get(callId)?.controller.abort(new MuxError(StatusCode.Canceled, "The server canceled the call."));
  }

  // ---- keepalive, GoAway and close -----------------------------------------------------------------

  private scheduleKeepAlive(delay: number): void {
    if (this.settings.keepAliveIntervalMs <= 0 || this.closed) {
      return;
    }
    this.keepAliveTimer = setTimeout(() => this.onKeepAliveTimer(), Math.max(1, delay));
    // A quiet client must not keep a Node process alive on its own account.
    (this.keepAliveTimer as { unref?: () => void }).unref?.();
  }

  // Pings only a connection on which nothing has arrived for the interval, and closes it when nothing
  // at all arrives within the timeout after the Ping: anything received is proof of life.
  private onKeepAliveTimer(): void {
    const now = performance.now();
    const { keepAliveIntervalMs: interval, keepAliveTimeoutMs: timeout } = this.settings;
    if (this.pingSentAt !== 0 && this.lastReceived < this.pingSentAt) {
      const waited = now - this.pingSentAt;
      if (waited >= timeout) {
        this.close(new MuxError(StatusCode.Unavailable, `The Mux server at ${this.url} sent no answer to a keepalive Ping within ${timeout} ms.`));
        return;
      }
      this.scheduleKeepAlive(timeout - waited);
      return;
    }
    this.pingSentAt = 0;
    const idle = now - this.lastReceived;
    if (idle < interval) {
      this.scheduleKeepAlive(interval - idle);
      return;
    }
    const o = this.reserve(HEADER_SIZE + 8);
    writeHeader(this.out, o, FrameType.Ping, 0, 0, 8);
    new DataView(this.out.buffer, this.out.byteOffset + o + HEADER_SIZE, 8).setFloat64(0, now, true);
    this.pingSentAt = now;
    this.scheduleKeepAlive(timeout);
  }

  private goAway(lastId: number): void {
    this.startDraining();
    // The server never ran, and never will run, any call above its GoAway's id: safe to send again.
    for (const [id, call] of this.calls) {
      if (id > lastId) {
        this.calls.delete(id);
        if (call.state === CallState.Sent) {
          this.owner.notRun(call, new MuxError(StatusCode.Unavailable, `The Mux server at ${this.url} is going away and never ran the call to ${call.method}.`, { notRun: true }));
        }
      }
    }
    this.closeIfDrained();
  }

  private startDraining(): void {
    if (!this.draining) {
      this.draining = true;
      this.owner.connectionDraining(this);
    }
  }

  private closeIfDrained(): void {
    if (this.draining && !this.closed && this.calls.size === 0 && this.serverCalls.size === 0) {
      this.closeGracefully(new MuxError(StatusCode.Unavailable, `The Mux server at ${this.url} went away (GoAway).`));
    }
  }

  /** Ends the connection without losing what is in flight: flushes, ends the send side, waits for the server's close. */
  closeGracefully(error: MuxError): Promise<void> {
    if (!this.closed) {
      this.flushNow();
      this.shutDown(error);
      this.transport.close(true);
    }
    return this.whenClosed();
  }

  /** Closes at once: every call still waiting for an answer fails with `error`. */
  close(error: MuxError): void {
    if (this.closed) {
      return;
    }
    this.shutDown(error);
    this.transport.close(false);
  }

  private shutDown(error: MuxError): void {
    this.closed = true;
    this.draining = true;
    this.closeError = error;
    if (this.keepAliveTimer !== undefined) {
      clearTimeout(this.keepAliveTimer);
    }
    if (this.handshake !== null) {
      const handshake = this.handshake;
      this.handshake = null;
      handshake.reject(error);
    }
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const call of calls) {
      call.fail(error, false);
    }
    for (const call of this.serverCalls.values()) {
      call.controller.abort(error);
    }
    this.serverCalls.clear();
    this.reassemblies.clear();
    this.owner.connectionClosed(this, error);
  }

  private onTransportClosed(error: Error | undefined): void {
    if (!this.closed) {
      this.shutDown(new MuxError(StatusCode.Unavailable, `The connection to the Mux server at ${this.url} was lost${error ? `: ${error.message}` : "."}`, { cause: error }));
    }
    const waiters = this.closedWaiters;
    this.closedWaiters = [];
    this.transportClosed = true;
    for (const w of waiters) w();
  }

  private transportClosed = false;

  /** Resolves once the transport has closed. */
  whenClosed(): Promise<void> {
    if (this.transportClosed) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.closedWaiters.push(resolve));
  }

  /** Why the connection closed (null while open). */
  get error(): MuxError | null {
    return this.closeError;
  }
}

function readMetadata(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new Error("not a MessagePack map of strings");
  }
  const result: Record<string, string> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== "string") {
      throw new Error(`the value of "${key}" is not a string`);
    }
    result[key.toLowerCase()] = v;
  }
  return result;
}

/** Checks and lower-cases a call's metadata as docs/protocol.md's *Metadata* requires; throws a TypeError naming the fault. */
export function validateMetadata(metadata: Record<string, string>): Record<string, string> | null {
  const result: Record<string, string> = {};
  let any = false;
  for (const [key, value] of Object.entries(metadata)) {
    if (key.length === 0 || !/^[\x21-\x7e]+$/.test(key)) {
      throw new TypeError(`The metadata key "${key}" is not one or more printable ASCII characters without spaces.`);
    }
    const lower = key.toLowerCase();
    if (lower.startsWith("mux-")) {
      throw new TypeError(`The metadata key "${key}" starts with "mux-", which is reserved for Mux.`);
    }
    if (lower in result) {
      throw new TypeError(`The metadata key "${key}" appears twice (keys are compared case-insensitively).`);
    }
    if (typeof value !== "string") {
      throw new TypeError(`The metadata value of "${key}" is not a string.`);
    }
    result[lower] = value;
    any = true;
  }
  return any ? result : null;
}
