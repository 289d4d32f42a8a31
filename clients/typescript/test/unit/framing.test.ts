// Framing against the byte vectors of docs/protocol.md: method ids, the frame layout, fragments.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Flags, FrameReader, FrameType, ProtocolViolation, encodeMessage, methodId, readU32, type FrameView } from "../../src/protocol.js";
import { hex } from "../helpers.js";
import { FrameCollector } from "./fakes.js";

test("method ids are the FNV-1a hashes of the doc's examples", () => {
  assert.equal(methodId("Mux.Samples.Contracts.IUserService.Add"), 0x7dc7526f);
  assert.equal(methodId("Mux.Samples.Progress.IProgressSink.Report"), 0xcc488fcc);
});

test("method ids hash the UTF-8 bytes, not UTF-16 code units", () => {
  // FNV-1a over "é" as UTF-8 (c3 a9), computed by hand from the doc's offset basis and prime.
  let h = 2166136261;
  for (const b of [0xc3, 0xa9]) {
    h = Math.imul(h ^ b, 16777619) >>> 0;
  }
  assert.equal(methodId("é"), h);
});

const addRequest = hex("0d 00 00 00  03  00  07 00 00 00  6f 52 c7 7d  92 02 03");

function collect(reader: FrameReader, chunks: Uint8Array[]): { type: number; flags: number; callId: number; body: number[] }[] {
  const frames: { type: number; flags: number; callId: number; body: number[] }[] = [];
  for (const chunk of chunks) {
    reader.push(chunk, (f: FrameView) => frames.push({ type: f.type, flags: f.flags, callId: f.callId, body: [...f.bytes.subarray(f.start, f.end)] }));
  }
  return frames;
}

test("the reader reads the doc's Add(2, 3) Request, however the bytes are split", () => {
  const expected = [{ type: FrameType.Request, flags: 0, callId: 7, body: [0x6f, 0x52, 0xc7, 0x7d, 0x92, 0x02, 0x03] }];
  assert.deepEqual(collect(new FrameReader(), [addRequest]), expected);
  for (let cut = 1; cut < addRequest.length; cut++) {
    const frames = collect(new FrameReader(), [addRequest.subarray(0, cut), addRequest.subarray(cut)]);
    assert.deepEqual(frames, expected, `split at ${cut}`);
  }
  const oneByOne = collect(new FrameReader(), [...addRequest].map((b) => Uint8Array.of(b)));
  assert.deepEqual(oneByOne, expected);
});

test("the reader reads back-to-back frames of one chunk in order", () => {
  // The doc's second stream item and its credit of 32 for call 5.
  const item = hex("07 00 00 00  0a  00  05 00 00 00  02");
  const credit = hex("0a 00 00 00 0c 00 05 00 00 00 20 00 00 00");
  const both = new Uint8Array([...item, ...credit]);
  const frames = collect(new FrameReader(), [both]);
  assert.deepEqual(frames, [
    { type: FrameType.StreamItem, flags: 0, callId: 5, body: [0x02] },
    { type: FrameType.StreamCredit, flags: 0, callId: 5, body: [0x20, 0, 0, 0] },
  ]);
});

test("the reader refuses a frame over its limit as soon as the length bytes arrive", () => {
  const reader = new FrameReader(); // 4096 until the handshake has completed
  // Only the 4 length bytes of a frame announcing 4097: refused before any more is buffered.
  assert.throws(() => reader.push(hex("01 10 00 00"), () => {}), (e: unknown) => e instanceof ProtocolViolation && /4097.*4096/.test(e.message));
});

test("the reader refuses a length under 6", () => {
  assert.throws(() => new FrameReader().push(hex("05 00 00 00 07 00"), () => {}), (e: unknown) => e instanceof ProtocolViolation && /length 5/.test(e.message));
});

test("a message up to the fragment size goes in one frame, as the doc's Add(2, 3)", () => {
  const message = hex("6f 52 c7 7d  92 02 03");
  assert.deepEqual([...encodeMessage(FrameType.Request, 0, 7, message, 65536)], [...addRequest]);
});

test("a Request of 150,000 bytes as call 9 goes in the doc's three fragments", () => {
  const message = new Uint8Array(150000);
  for (let i = 0; i < message.length; i++) message[i] = (i * 7) & 0xff;
  const bytes = encodeMessage(FrameType.Request, 0, 9, message, 65536);
  const collector = new FrameCollector();
  collector.push(bytes);
  const frames = collector.frames;
  assert.equal(frames.length, 3);
  // length 65546 · 03 Request · 01 MoreFragments · 09 00 00 00 · f0 49 02 00 (total 150,000) · 65,536 bytes of the message
  assert.deepEqual([...frames[0]!.bytes.subarray(0, 14)], [...hex("0a 00 01 00  03  01  09 00 00 00  f0 49 02 00")]);
  assert.equal(readU32(frames[0]!.bytes, 0), 65546);
  // length 65542 · 0e Continuation · 01 · 09 00 00 00 · the next 65,536 bytes
  assert.deepEqual([...frames[1]!.bytes.subarray(0, 10)], [...hex("06 00 01 00  0e  01  09 00 00 00")]);
  // length 18934 · 0e Continuation · 00 · 09 00 00 00 · the last 18,928 bytes
  assert.deepEqual([...frames[2]!.bytes.subarray(0, 10)], [...hex("f6 49 00 00  0e  00  09 00 00 00")]);
  assert.equal(readU32(frames[2]!.bytes, 0), 18934);
  const joined = new Uint8Array([...frames[0]!.body.subarray(4), ...frames[1]!.body, ...frames[2]!.body]);
  assert.deepEqual(joined, message);
});

test("the Continuations of a server's call keep ServerInitiated on every fragment", () => {
  const bytes = encodeMessage(FrameType.Response, Flags.ServerInitiated, 3, new Uint8Array(2500), 1024);
  const collector = new FrameCollector();
  collector.push(bytes);
  assert.deepEqual(
    collector.frames.map((f) => [f.type, f.flags]),
    [
      [FrameType.Response, Flags.ServerInitiated | Flags.MoreFragments],
      [FrameType.Continuation, Flags.ServerInitiated | Flags.MoreFragments],
      [FrameType.Continuation, Flags.ServerInitiated],
    ],
  );
});
