// Frames of the Mux wire protocol, version 2 (docs/protocol.md): constants, the method-id hash and the
// pure functions that write and split frames. Nothing here knows about sockets or calls.

/** The protocol version this client speaks in its Hello. */
export const PROTOCOL_VERSION = 2;

/** Bytes of the common header: length (4), type (1), flags (1), call id (4). */
export const HEADER_SIZE = 10;

/** The frame size each side assumes of the other until the handshake has completed. */
export const HANDSHAKE_FRAME_SIZE = 4096;

export const FrameType = {
  Hello: 1,
  HelloAck: 2,
  Request: 3,
  Response: 4,
  Error: 5,
  Cancel: 6,
  Ping: 7,
  Pong: 8,
  GoAway: 9,
  StreamItem: 10,
  StreamEnd: 11,
  StreamCredit: 12,
  Continuation: 14,
} as const;

export const Flags = {
  MoreFragments: 0x01,
  TraceContext: 0x02,
  Deadline: 0x04,
  ServerInitiated: 0x08,
  Metadata: 0x10,
} as const;

/** The magic of Hello and HelloAck: ASCII "MUX1". */
export const MAGIC = [0x4d, 0x55, 0x58, 0x31] as const;

const FNV_OFFSET = 2166136261;
const FNV_PRIME = 16777619;
const utf8 = new TextEncoder();

/** The 32-bit FNV-1a hash of the UTF-8 bytes of `Namespace.IService.Method`: the method's id on the wire. */
export function methodId(name: string): number {
  const bytes = utf8.encode(name);
  let hash = FNV_OFFSET;
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

export function readU32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

export function writeU32(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = (v >>> 24) & 0xff;
}

/** Writes the common header of a frame whose message (everything after the header) is `messageSize` bytes. */
export function writeHeader(b: Uint8Array, o: number, type: number, flags: number, callId: number, messageSize: number): void {
  writeU32(b, o, messageSize + 6);
  b[o + 4] = type;
  b[o + 5] = flags;
  writeU32(b, o + 6, callId);
}

/** One frame as the reader hands it on: `bytes[start, end)` is the message after the common header. */
export interface FrameView {
  type: number;
  flags: number;
  callId: number;
  bytes: Uint8Array;
  start: number;
  end: number;
}

/** Thrown for input that breaks the protocol; the connection closes with its message. */
export class ProtocolViolation extends Error {
  override name = "ProtocolViolation";
}

/**
 * Splits a byte stream into frames. It checks each frame's length against the limit as soon as the
 * four length bytes are there, before it waits for the rest, and keeps only an unfinished frame's bytes.
 */
export class FrameReader {
  /** The largest `length` accepted: 4096 until the handshake completes, then this side's maxFrameSize. */
  maxFrameSize: number = HANDSHAKE_FRAME_SIZE;
  // The bytes of a frame not yet complete, left over from earlier chunks (null when none).
  private rest: Uint8Array | null = null;
  private readonly frame: FrameView = { type: 0, flags: 0, callId: 0, bytes: new Uint8Array(0), start: 0, end: 0 };

  /**
   * Feeds one chunk and calls `onFrame` for every whole frame in it, in order. The view passed to
   * `onFrame` is reused: copy what must outlive the call. The chunk's bytes must not change afterwards
   * (frames are views into it).
   */
  push(chunk: Uint8Array, onFrame: (frame: FrameView) => void): void {
    let b = chunk;
    if (this.rest !== null) {
      const joined = new Uint8Array(this.rest.length + chunk.length);
      joined.set(this.rest, 0);
      joined.set(chunk, this.rest.length);
      b = joined;
      this.rest = null;
    }
    let o = 0;
    const n = b.length;
    const f = this.frame;
    while (n - o >= 4) {
      const length = readU32(b, o);
      if (length < 6) {
        throw new ProtocolViolation(`A frame announced length ${length}, less than the 6 bytes of type, flags and call id.`);
      }
      if (length > this.maxFrameSize) {
        throw new ProtocolViolation(`A frame announced length ${length}, over this side's maximum frame size of ${this.maxFrameSize} bytes.`);
      }
      if (n - o < 4 + length) {
        break;
      }
      f.type = b[o + 4]!;
      f.flags = b[o + 5]!;
      f.callId = readU32(b, o + 6);
      f.bytes = b;
      f.start = o + HEADER_SIZE;
      f.end = o + 4 + length;
      o = f.end;
      onFrame(f);
    }
    if (o < n) {
      this.rest = o === 0 ? b : b.slice(o);
    }
  }

  /** Whether bytes of an unfinished frame are waiting for the rest. */
  get hasPartialFrame(): boolean {
    return this.rest !== null;
  }
}

/**
 * Splits one message (a Request, Response or Error's bytes after the common header) into frames of at
 * most `fragmentSize` message bytes each, as docs/protocol.md's *Fragments* says: a message that fits
 * goes in one frame; otherwise a first fragment (its type, MoreFragments, the u32 total, the first
 * bytes) and Continuations (MoreFragments on all but the last). Continuations keep ServerInitiated.
 * Returns the frames' bytes, written into one new array.
 */
export function encodeMessage(type: number, flags: number, callId: number, message: Uint8Array, fragmentSize: number): Uint8Array {
  const size = message.length;
  if (size <= fragmentSize) {
    const out = new Uint8Array(HEADER_SIZE + size);
    writeHeader(out, 0, type, flags, callId, size);
    out.set(message, HEADER_SIZE);
    return out;
  }
  const out = new Uint8Array(fragmentedSize(size, fragmentSize));
  writeFragments(out, 0, type, flags, callId, message, fragmentSize);
  return out;
}

/** The bytes the frames of a message of `size` bytes take once split into fragments of `fragmentSize`. */
export function fragmentedSize(size: number, fragmentSize: number): number {
  const continuations = Math.ceil((size - fragmentSize) / fragmentSize);
  return HEADER_SIZE + 4 + fragmentSize + continuations * HEADER_SIZE + (size - fragmentSize);
}

/** Writes a message larger than `fragmentSize` as fragments at `out[o]`; returns the offset after them. */
export function writeFragments(out: Uint8Array, o: number, type: number, flags: number, callId: number, message: Uint8Array, fragmentSize: number): number {
  const size = message.length;
  writeHeader(out, o, type, flags | Flags.MoreFragments, callId, 4 + fragmentSize);
  writeU32(out, o + HEADER_SIZE, size);
  out.set(message.subarray(0, fragmentSize), o + HEADER_SIZE + 4);
  o += HEADER_SIZE + 4 + fragmentSize;
  const continuationFlags = flags & Flags.ServerInitiated;
  for (let sent = fragmentSize; sent < size; ) {
    const chunk = Math.min(fragmentSize, size - sent);
    const last = sent + chunk === size;
    writeHeader(out, o, FrameType.Continuation, last ? continuationFlags : continuationFlags | Flags.MoreFragments, callId, chunk);
    out.set(message.subarray(sent, sent + chunk), o + HEADER_SIZE);
    o += HEADER_SIZE + chunk;
    sent += chunk;
  }
  return o;
}

/**
 * Collects one message arriving in fragments: the first fragment's total, then each Continuation's
 * bytes, until the total is reached. A message over the receiver's limit is counted, not kept.
 */
export class Reassembly {
  /** The whole message once complete (null while dropping one over the limit). */
  readonly buffer: Uint8Array | null;
  received = 0;

  constructor(
    /** The type of the first fragment: Request, Response or Error. */
    readonly type: number,
    /** The first fragment's flags without MoreFragments. */
    readonly flags: number,
    readonly total: number,
    drop: boolean,
  ) {
    this.buffer = drop ? null : new Uint8Array(total);
  }

  /** Adds the next bytes; throws when they run past the announced total. */
  add(bytes: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (this.received + n > this.total) {
      throw new ProtocolViolation(`Fragments of call ran past the announced total of ${this.total} bytes.`);
    }
    if (this.buffer !== null) {
      this.buffer.set(bytes.subarray(start, end), this.received);
    }
    this.received += n;
  }

  get complete(): boolean {
    return this.received === this.total;
  }
}

/** Reads a first fragment's total and checks it is larger than what the first fragment carries. */
export function readFirstFragmentTotal(f: FrameView): number {
  if (f.end - f.start < 4) {
    throw new ProtocolViolation("A first fragment is shorter than its 4-byte total.");
  }
  const total = readU32(f.bytes, f.start);
  if (total <= f.end - f.start - 4) {
    throw new ProtocolViolation(`A first fragment announced a total of ${total} bytes, not more than it carries itself.`);
  }
  return total;
}
