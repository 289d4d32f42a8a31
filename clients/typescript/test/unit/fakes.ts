// A transport whose bytes the test reads and writes, and a raw Mux server peer over real TCP, so the
// client's frames can be checked byte for byte against docs/protocol.md.
import { Decoder, Encoder } from "@msgpack/msgpack";
import * as net from "node:net";
import { FrameReader, FrameType, HEADER_SIZE, writeHeader } from "../../src/protocol.js";
import type { Transport } from "../../src/transport.js";
import { waitFor } from "../helpers.js";

/** A frame as a test reads it: its header fields, and its whole bytes. */
export interface Frame {
  type: number;
  flags: number;
  callId: number;
  /** The message after the common header. */
  body: Uint8Array;
  /** The whole frame, header included. */
  bytes: Uint8Array;
}

/** Splits bytes into frames (no size limit). */
export class FrameCollector {
  readonly frames: Frame[] = [];
  private readonly reader = new FrameReader();
  constructor() {
    this.reader.maxFrameSize = 0xffffffff;
  }
  push(chunk: Uint8Array): void {
    this.reader.push(chunk, (f) =>
      this.frames.push({
        type: f.type,
        flags: f.flags,
        callId: f.callId,
        body: f.bytes.slice(f.start, f.end),
        bytes: f.bytes.slice(f.start - HEADER_SIZE, f.end),
      }),
    );
  }
}

export class FakeTransport implements Transport {
  readonly written = new FrameCollector();
  closedGracefully: boolean | null = null;
  onData: (chunk: Uint8Array) => void = () => {};
  onClose: (error: Error | undefined) => void = () => {};

  send(bytes: Uint8Array): void {
    this.written.push(bytes);
  }
  close(graceful: boolean): void {
    if (this.closedGracefully === null) {
      this.closedGracefully = graceful;
      queueMicrotask(() => this.onClose(undefined));
    }
  }
  get frames(): Frame[] {
    return this.written.frames;
  }
  /** Waits until the client has written a frame matching `match` after the first `from` frames; returns it. */
  async next(match: (f: Frame) => boolean, what: string, from = 0): Promise<Frame> {
    let found: Frame | undefined;
    await waitFor(() => (found = this.frames.slice(from).find(match)) !== undefined, what);
    return found!;
  }
}

const encoder = new Encoder();
export const decoder = new Decoder();

/** A whole frame: header, then the message bytes. */
export function frame(type: number, flags: number, callId: number, message: Uint8Array | ArrayLike<number> = []): Uint8Array {
  const bytes = new Uint8Array(HEADER_SIZE + message.length);
  writeHeader(bytes, 0, type, flags, callId, message.length);
  bytes.set(message, HEADER_SIZE);
  return bytes;
}

export function msgpack(value: unknown): Uint8Array {
  return encoder.encode(value);
}

/** A HelloAck with the given settings. */
export function helloAck(settings: Record<string, unknown> = { maxFrameSize: 4 * 1024 * 1024, maxConcurrentCalls: 1000, streamWindow: 64 }): Uint8Array {
  const body = msgpack(settings);
  const message = new Uint8Array(6 + body.length);
  message.set([0x4d, 0x55, 0x58, 0x31, 2, 0], 0);
  message.set(body, 6);
  return frame(FrameType.HelloAck, 0, 0, message);
}

/** One accepted TCP connection of the raw peer. */
export class RawConnection {
  readonly received = new FrameCollector();
  closed = false;
  constructor(readonly socket: net.Socket) {
    socket.on("data", (chunk: Uint8Array) => this.received.push(chunk));
    socket.on("close", () => (this.closed = true));
    socket.on("error", () => {});
  }
  send(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }
  get frames(): Frame[] {
    return this.received.frames;
  }
  async next(match: (f: Frame) => boolean, what: string, from = 0): Promise<Frame> {
    let found: Frame | undefined;
    await waitFor(() => (found = this.frames.slice(from).find(match)) !== undefined, what);
    return found!;
  }
}

/** A TCP server that speaks raw frames: the test plays the Mux server. */
export class RawPeer {
  readonly connections: RawConnection[] = [];
  private constructor(private readonly server: net.Server, readonly port: number) {}

  static async listen(onConnection?: (c: RawConnection) => void): Promise<RawPeer> {
    let peer: RawPeer;
    const server = net.createServer((socket) => {
      const c = new RawConnection(socket);
      peer.connections.push(c);
      onConnection?.(c);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    peer = new RawPeer(server, (server.address() as net.AddressInfo).port);
    return peer;
  }

  get url(): string {
    return `tcp://127.0.0.1:${this.port}`;
  }

  /** Waits for the `index`th connection and answers its Hello with `ack`. */
  async accept(index: number, ack: Uint8Array = helloAck()): Promise<RawConnection> {
    await waitFor(() => this.connections.length > index, `connection ${index}`);
    const c = this.connections[index]!;
    await c.next((f) => f.type === FrameType.Hello, "the Hello");
    c.send(ack);
    return c;
  }

  async close(): Promise<void> {
    for (const c of this.connections) {
      c.socket.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
