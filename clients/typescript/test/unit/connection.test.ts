// One connection over a transport the test drives: the frames the client writes are compared with
// docs/protocol.md's examples, and the server's frames are fed in as bytes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { OutgoingCall } from "../../src/call.js";
import { Connection, type ConnectionOwner, type ConnectionSettings, type HandlerEntry } from "../../src/connection.js";
import { MuxError, StatusCode } from "../../src/errors.js";
import { Flags, FrameType, methodId } from "../../src/protocol.js";
import { hex, toHex, waitFor, within } from "../helpers.js";
import { FakeTransport, decoder, frame, helloAck, msgpack, type Frame } from "./fakes.js";

const settings: ConnectionSettings = {
  authToken: undefined,
  maxFrameSize: 4 * 1024 * 1024,
  maxMessageSize: 64 * 1024 * 1024,
  fragmentSize: 64 * 1024,
  streamWindow: 64,
  maxMetadataSize: 8192,
  keepAliveIntervalMs: 0,
  keepAliveTimeoutMs: 20000,
  extensionCodec: undefined,
  useBigInt64: false,
};

class Owner implements ConnectionOwner {
  readonly handlers = new Map<number, HandlerEntry>();
  closed: MuxError | null = null;
  draining = false;
  readonly notRunCalls: OutgoingCall[] = [];
  connectionClosed(_c: Connection, error: MuxError): void {
    this.closed = error;
  }
  connectionDraining(): void {
    this.draining = true;
  }
  slotFreed(): void {}
  notRun(call: OutgoingCall): void {
    this.notRunCalls.push(call);
  }
}

async function open(overrides: Partial<ConnectionSettings> = {}, ack = helloAck()) {
  const transport = new FakeTransport();
  const owner = new Owner();
  const pending = Connection.handshake(transport, { ...settings, ...overrides }, owner, "tcp://test:1");
  await transport.next((f) => f.type === FrameType.Hello, "the Hello");
  transport.onData(ack);
  const connection = await within(pending, "the handshake");
  return { transport, owner, connection };
}

const ADD = "Mux.Samples.Contracts.IUserService.Add";

function makeCall(method: string, args: unknown[], options: { stream?: boolean; timeoutMs?: number; source?: AsyncIterable<unknown> } = {}): OutgoingCall {
  const timeoutMs = options.timeoutMs ?? 0;
  const call = new OutgoingCall(method, methodId(method), args, options.source ?? null, options.stream ?? false, timeoutMs > 0 ? performance.now() + timeoutMs : Infinity, timeoutMs, null, () => "");
  call.promise?.catch(() => {});
  return call;
}

function requests(transport: FakeTransport): Frame[] {
  return transport.frames.filter((f) => f.type === FrameType.Request);
}

test("the Hello carries the magic MUX1, version 2 and the client's settings", async () => {
  const transport = new FakeTransport();
  void Connection.handshake(transport, { ...settings, authToken: "secret" }, new Owner(), "tcp://test:1").catch(() => {});
  const hello = await transport.next((f) => f.type === FrameType.Hello, "the Hello");
  assert.equal(hello.callId, 0);
  assert.equal(hello.flags, 0);
  assert.deepEqual([...hello.body.subarray(0, 6)], [0x4d, 0x55, 0x58, 0x31, 0x02, 0x00]);
  assert.deepEqual(decoder.decode(hello.body.subarray(6)), {
    maxFrameSize: 4 * 1024 * 1024,
    maxMessageSize: 64 * 1024 * 1024,
    streamWindow: 64,
    maxMetadataSize: 8192,
    cancelEndsFragments: true,
    authToken: "secret",
  });
});

test("a refused handshake fails with the server's code and message", async () => {
  const transport = new FakeTransport();
  const pending = Connection.handshake(transport, settings, new Owner(), "tcp://test:1");
  await transport.next((f) => f.type === FrameType.Hello, "the Hello");
  transport.onData(frame(FrameType.Error, 0, 0, msgpack([StatusCode.Unauthenticated, "bad token", null])));
  await assert.rejects(pending, (e: unknown) => e instanceof MuxError && e.statusCode === 11 && /refused the connection \(Unauthenticated\): bad token/.test(e.message));
  assert.equal(transport.closedGracefully, false);
});

test("a HelloAck of another version fails the connect, naming it", async () => {
  const transport = new FakeTransport();
  const pending = Connection.handshake(transport, settings, new Owner(), "tcp://test:1");
  await transport.next((f) => f.type === FrameType.Hello, "the Hello");
  transport.onData(frame(FrameType.HelloAck, 0, 0, [0x4d, 0x55, 0x58, 0x31, 3, 0, 0x80]));
  await assert.rejects(pending, (e: unknown) => e instanceof MuxError && /protocol version 3/.test(e.message));
});

test("Add(2, 3) as call 7 is the doc's 17 bytes", async () => {
  const { transport, connection } = await open();
  for (let i = 0; i < 7; i++) {
    connection.send(makeCall(ADD, [2, 3]));
  }
  await waitFor(() => requests(transport).length === 7, "seven requests");
  assert.equal(toHex(requests(transport)[6]!.bytes), toHex(hex("0d 00 00 00  03  00  07 00 00 00  6f 52 c7 7d  92 02 03")));
});

test("Add(2, 3) as call 7 with 1.5 s left is the doc's 21 bytes with the Deadline flag", async () => {
  const { transport, connection } = await open();
  for (let i = 0; i < 6; i++) {
    connection.send(makeCall(ADD, [2, 3]));
  }
  connection.send(makeCall(ADD, [2, 3], { timeoutMs: 1500 }));
  await waitFor(() => requests(transport).length === 7, "seven requests");
  assert.equal(toHex(requests(transport)[6]!.bytes), toHex(hex("11 00 00 00  03  04  07 00 00 00  6f 52 c7 7d  dc 05 00 00  92 02 03")));
});

test("metadata is a section after the headers: u32 size, then a map of lower-cased keys", async () => {
  const { transport, connection } = await open(undefined, helloAck({ maxConcurrentCalls: 10, maxMetadataSize: 100 }));
  const call = makeCall(ADD, [2, 3], { timeoutMs: 1500 });
  call.metadata = { tenant: "t1" };
  connection.send(call);
  const request = await transport.next((f) => f.type === FrameType.Request, "the request");
  assert.equal(request.flags, Flags.Deadline | Flags.Metadata);
  const map = msgpack({ tenant: "t1" });
  assert.equal(toHex(request.body), toHex(new Uint8Array([0x6f, 0x52, 0xc7, 0x7d, 0xdc, 0x05, 0, 0, map.length, 0, 0, 0, ...map, 0x92, 0x02, 0x03])));
});

test("metadata is left out for a server that announced no maxMetadataSize, and the call goes on", async () => {
  const { transport, connection } = await open(undefined, helloAck({ maxConcurrentCalls: 10 }));
  const call = makeCall(ADD, [2, 3]);
  call.metadata = { tenant: "t1" };
  connection.send(call);
  const request = await transport.next((f) => f.type === FrameType.Request, "the request");
  assert.equal(request.flags, 0);
});

test("metadata is left out for a server that announced a maxMetadataSize of 0 (it reads none)", async () => {
  const { transport, connection } = await open(undefined, helloAck({ maxConcurrentCalls: 10, maxMetadataSize: 0 }));
  const call = makeCall(ADD, [2, 3]);
  call.metadata = { tenant: "t1" };
  connection.send(call);
  const request = await transport.next((f) => f.type === FrameType.Request, "the request");
  assert.equal(request.flags, 0);
  assert.equal(toHex(request.body), "6f 52 c7 7d 92 02 03");
});

test("metadata over the server's maxMetadataSize fails the call unsent", async () => {
  const { transport, connection } = await open(undefined, helloAck({ maxConcurrentCalls: 10, maxMetadataSize: 8 }));
  const call = makeCall(ADD, [2, 3]);
  call.metadata = { tenant: "a long value" };
  connection.send(call);
  await assert.rejects(call.promise!, (e: unknown) => e instanceof MuxError && e.statusCode === 15 && e.notRun && /over the server's maxMetadataSize of 8/.test(e.message));
  assert.equal(requests(transport).length, 0);
});

test("a Response resolves its call, an Error rejects it with code, message and remote type", async () => {
  const { transport, connection } = await open();
  const ok = makeCall(ADD, [2, 3]);
  const failed = makeCall(ADD, [2, 3]);
  connection.send(ok);
  connection.send(failed);
  transport.onData(new Uint8Array([...frame(FrameType.Error, 0, 2, msgpack([9, "no such user", "System.Exception"])), ...frame(FrameType.Response, 0, 1, [0x05])]));
  assert.equal(await ok.promise, 5);
  await assert.rejects(failed.promise!, (e: unknown) => e instanceof MuxError && e.statusCode === 9 && e.status === "NotFound" && e.message === "no such user" && e.remoteType === "System.Exception");
});

test("the server's DeadlineExceeded for a call with a deadline fails it as the client's own timeout would", async () => {
  const { transport, connection } = await open();
  const call = makeCall(ADD, [2, 3], { timeoutMs: 60000 });
  connection.send(call);
  transport.onData(frame(FrameType.Error, 0, 1, msgpack([StatusCode.DeadlineExceeded, "IUserService.Add stopped at the caller's deadline.", null])));
  await assert.rejects(call.promise!, (e: unknown) => {
    assert.ok(e instanceof MuxError);
    assert.equal(e.statusCode, StatusCode.DeadlineExceeded);
    assert.equal(e.message, `The call to ${ADD} timed out after 60000 ms.`);
    assert.equal((e.cause as MuxError).message, "IUserService.Add stopped at the caller's deadline.");
    return true;
  });
  assert.equal(transport.frames.filter((f) => f.type === FrameType.Cancel).length, 0, "no Cancel for a call the server answered");
});

test("a large Request goes in fragments of the configured size", async () => {
  const { transport, connection } = await open({ fragmentSize: 65536 });
  for (let i = 0; i < 8; i++) {
    connection.send(makeCall(ADD, [2, 3]));
  }
  // 4 bytes of method id + [bin32 of 149,990 bytes] (91 c6 + 4 bytes of length) = the doc's 150,000-byte message.
  connection.send(makeCall(ADD, [new Uint8Array(149990)]));
  await waitFor(() => transport.frames.filter((f) => f.callId === 9).length === 3, "three fragments of call 9");
  const fragments = transport.frames.filter((f) => f.callId === 9);
  assert.deepEqual(fragments.map((f) => [f.type, f.flags, f.bytes.length - 4]), [
    [FrameType.Request, Flags.MoreFragments, 65546],
    [FrameType.Continuation, Flags.MoreFragments, 65542],
    [FrameType.Continuation, 0, 18934],
  ]);
  assert.equal(toHex(fragments[0]!.body.subarray(0, 8)), "f0 49 02 00 6f 52 c7 7d");
});

test("a Response arriving in fragments, byte by byte, completes its call", async () => {
  const { transport, connection } = await open();
  const call = makeCall(ADD, [2, 3]);
  connection.send(call);
  const value = "x".repeat(5000);
  const message = msgpack(value);
  const first = new Uint8Array([0, 0, 0, 0, ...message.subarray(0, 2000)]);
  new DataView(first.buffer).setUint32(0, message.length, true);
  const bytes = new Uint8Array([
    ...frame(FrameType.Response, Flags.MoreFragments, 1, first),
    ...frame(FrameType.Continuation, Flags.MoreFragments, 1, message.subarray(2000, 4000)),
    ...frame(FrameType.Continuation, Flags.MoreFragments, 1, []),
    ...frame(FrameType.Continuation, 0, 1, message.subarray(4000)),
  ]);
  for (const b of bytes) {
    transport.onData(Uint8Array.of(b));
  }
  assert.equal(await within(call.promise!, "the response"), value);
});

test("an answer over maxMessageSize fails only its call; its rest is dropped and the connection goes on", async () => {
  const { transport, connection, owner } = await open({ maxMessageSize: 4096 });
  const big = makeCall(ADD, [2, 3]);
  const next = makeCall(ADD, [2, 3]);
  connection.send(big);
  connection.send(next);
  const first = new Uint8Array(4 + 3000);
  new DataView(first.buffer).setUint32(0, 6000, true);
  transport.onData(frame(FrameType.Response, Flags.MoreFragments, 1, first));
  await assert.rejects(big.promise!, (e: unknown) => e instanceof MuxError && e.statusCode === 15 && /6000 bytes, over this client's maxMessageSize of 4096/.test(e.message));
  transport.onData(frame(FrameType.Continuation, 0, 1, new Uint8Array(3000)));
  transport.onData(frame(FrameType.Response, 0, 2, [0x07]));
  assert.equal(await next.promise, 7);
  assert.equal(owner.closed, null);
});

test("a Continuation with no message in fragments closes the connection as a protocol error", async () => {
  const { transport, connection, owner } = await open();
  const call = makeCall(ADD, [2, 3]);
  connection.send(call);
  transport.onData(frame(FrameType.Continuation, 0, 1, [1, 2, 3]));
  await assert.rejects(call.promise!, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.ProtocolError && /Continuation for call 1, which has no message in fragments/.test(e.message));
  assert.equal(owner.closed?.statusCode, StatusCode.ProtocolError);
  assert.equal(transport.closedGracefully, false);
});

test("a server's call Report(\"a\", 50) is answered as in the doc", async () => {
  const { transport, owner } = await open();
  const seen: unknown[][] = [];
  owner.handlers.set(0xcc488fcc, { method: "Mux.Samples.Progress.IProgressSink.Report", handler: (args) => (seen.push(args), true) });
  transport.onData(hex("0e 00 00 00  03  08  01 00 00 00  cc 8f 48 cc  92 a1 61 32"));
  const response = await transport.next((f) => f.type === FrameType.Response, "the client's Response");
  assert.equal(toHex(response.bytes), toHex(hex("07 00 00 00  04  08  01 00 00 00  c3")));
  assert.deepEqual(seen, [["a", 50]]);
});

test("a server's call to a method the client does not serve gets UnknownMethod with ServerInitiated", async () => {
  const { transport } = await open();
  transport.onData(frame(FrameType.Request, Flags.ServerInitiated, 4, [0x01, 0x02, 0x03, 0x04, 0x90]));
  const error = await transport.next((f) => f.type === FrameType.Error, "the client's Error");
  assert.equal(error.flags, Flags.ServerInitiated);
  assert.equal(error.callId, 4);
  const [code, message] = decoder.decode(error.body) as [number, string];
  assert.equal(code, StatusCode.UnknownMethod);
  assert.match(message, /does not serve method id 0x04030201/);
});

test("a server's Cancel aborts the handler's signal; a thrown MuxError answers with its status", async () => {
  const { transport, owner } = await open();
  let aborted = false;
  let started = false;
  owner.handlers.set(methodId("T.ISink.Wait"), {
    method: "T.ISink.Wait",
    handler: (_args, context) =>
      new Promise((_, reject) => {
        started = true;
        context.signal.addEventListener("abort", () => {
          aborted = true;
          reject(new MuxError(StatusCode.Canceled, "stopped"));
        });
      }),
  });
  const request = new Uint8Array([0, 0, 0, 0, 0x90]);
  new DataView(request.buffer).setUint32(0, methodId("T.ISink.Wait"), true);
  transport.onData(frame(FrameType.Request, Flags.ServerInitiated, 1, request));
  await waitFor(() => started, "the handler's start");
  transport.onData(frame(FrameType.Cancel, Flags.ServerInitiated, 1));
  const error = await transport.next((f) => f.type === FrameType.Error, "the client's Error");
  assert.equal(aborted, true);
  assert.deepEqual(decoder.decode(error.body), [StatusCode.Canceled, "stopped", null]);
});

test("a server's call cancelled before its handler's turn never runs, and is answered Canceled", async () => {
  const { transport, owner } = await open();
  let ran = false;
  owner.handlers.set(methodId("T.ISink.Wait"), { method: "T.ISink.Wait", handler: () => (ran = true) });
  const request = new Uint8Array([0, 0, 0, 0, 0x90]);
  new DataView(request.buffer).setUint32(0, methodId("T.ISink.Wait"), true);
  transport.onData(new Uint8Array([...frame(FrameType.Request, Flags.ServerInitiated, 1, request), ...frame(FrameType.Cancel, Flags.ServerInitiated, 1)]));
  const error = await transport.next((f) => f.type === FrameType.Error, "the client's Error");
  assert.equal(error.flags, Flags.ServerInitiated);
  assert.deepEqual(decoder.decode(error.body), [StatusCode.Canceled, "The server canceled its call to T.ISink.Wait before it ran.", null]);
  assert.equal(ran, false);
});

test("the server's stream: items as in the doc, and a credit of 32 once half the window of 64 is read", async () => {
  const { transport, connection } = await open();
  for (let i = 0; i < 4; i++) {
    connection.send(makeCall(ADD, [2, 3]));
  }
  const call = makeCall("T.IS.Range", [1, 40], { stream: true });
  connection.send(call);
  const iterator = call.results![Symbol.asyncIterator]();
  transport.onData(hex("07 00 00 00  0a  00  05 00 00 00  02"));
  assert.deepEqual(await iterator.next(), { done: false, value: 2 });
  for (let i = 0; i < 39; i++) {
    transport.onData(frame(FrameType.StreamItem, 0, 5, msgpack(i)));
  }
  for (let i = 0; i < 30; i++) {
    await iterator.next();
  }
  assert.equal(transport.frames.filter((f) => f.type === FrameType.StreamCredit).length, 0, "no credit before 32 items are read");
  await iterator.next(); // the 32nd
  const credit = await transport.next((f) => f.type === FrameType.StreamCredit, "the credit");
  assert.equal(toHex(credit.bytes), toHex(hex("0a 00 00 00 0c 00 05 00 00 00 20 00 00 00")));
  transport.onData(frame(FrameType.Response, 0, 5, [0xc0]));
  let rest = 0;
  for (;;) {
    const r = await iterator.next();
    if (r.done) break;
    rest++;
  }
  assert.equal(rest, 8, "the items read after the Response arrived");
});

test("more stream items than the window closes the connection", async () => {
  const { transport, connection, owner } = await open({ streamWindow: 2 });
  const call = makeCall("T.IS.Range", [], { stream: true });
  connection.send(call);
  for (let i = 0; i < 3; i++) {
    transport.onData(frame(FrameType.StreamItem, 0, 1, msgpack(i)));
  }
  await waitFor(() => owner.closed !== null, "the close");
  assert.match(owner.closed!.message, /more items of call 1's stream than its credit of 2/);
});

test("an argument stream waits for credit: the server's window, then its StreamCredit", async () => {
  const { transport, connection } = await open(undefined, helloAck({ maxConcurrentCalls: 10, streamWindow: 2 }));
  async function* numbers() {
    for (let i = 1; i <= 5; i++) yield i;
  }
  const call = makeCall("T.IS.Sum", ["label"], { source: numbers() });
  connection.send(call);
  await waitFor(() => transport.frames.filter((f) => f.type === FrameType.StreamItem).length === 2, "two items");
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(transport.frames.filter((f) => f.type === FrameType.StreamItem).length, 2, "no item beyond the window");
  transport.onData(frame(FrameType.StreamCredit, 0, 1, [3, 0, 0, 0]));
  await transport.next((f) => f.type === FrameType.StreamEnd, "the StreamEnd");
  const items = transport.frames.filter((f) => f.type === FrameType.StreamItem).map((f) => decoder.decode(f.body));
  assert.deepEqual(items, [1, 2, 3, 4, 5]);
  const end = transport.frames.find((f) => f.type === FrameType.StreamEnd)!;
  assert.equal(end.body.length, 0);
  const order = transport.frames.filter((f) => f.callId === 1).map((f) => f.type);
  assert.equal(order[0], FrameType.Request, "the Request precedes every item");
  transport.onData(frame(FrameType.Response, 0, 1, [0x0f]));
  assert.equal(await call.promise, 15);
});

test("a failing argument stream ends with an Error body, cancels the call, and rejects with the producer's error", async () => {
  const { transport, connection } = await open();
  const boom = new Error("producer broke");
  async function* failing() {
    yield "a";
    throw boom;
  }
  const call = makeCall("T.IS.Collect", [], { source: failing() });
  connection.send(call);
  await assert.rejects(call.promise!, (e: unknown) => e === boom);
  const end = await transport.next((f) => f.type === FrameType.StreamEnd, "the StreamEnd");
  assert.deepEqual(decoder.decode(end.body), [StatusCode.HandlerFailed, "producer broke", null]);
  await transport.next((f) => f.type === FrameType.Cancel && f.callId === 1, "the Cancel");
});

test("a Ping is answered with a Pong carrying its 8 bytes and call id", async () => {
  const { transport } = await open();
  transport.onData(frame(FrameType.Ping, 0, 3, [1, 2, 3, 4, 5, 6, 7, 8]));
  const pong = await transport.next((f) => f.type === FrameType.Pong, "the Pong");
  assert.equal(toHex(pong.bytes), "0e 00 00 00 08 00 03 00 00 00 01 02 03 04 05 06 07 08");
});

test("GoAway: calls above its id are handed back as never run, those up to it complete, then the connection ends gracefully", async () => {
  const { transport, connection, owner } = await open();
  const calls = [1, 2, 3].map(() => makeCall(ADD, [2, 3]));
  for (const call of calls) connection.send(call);
  transport.onData(frame(FrameType.GoAway, 0, 0, [2, 0, 0, 0]));
  assert.equal(owner.draining, true);
  assert.deepEqual(owner.notRunCalls, [calls[2]]);
  assert.equal(connection.canSend, false);
  transport.onData(frame(FrameType.Response, 0, 1, [0x01]));
  assert.equal(transport.closedGracefully, null, "still waiting for call 2");
  transport.onData(frame(FrameType.Response, 0, 2, [0x02]));
  assert.deepEqual(await Promise.all([calls[0]!.promise, calls[1]!.promise]), [1, 2]);
  await waitFor(() => transport.closedGracefully === true, "the graceful close");
});

test("keepalive: a Ping when nothing arrives for the interval, and a close when nothing follows within the timeout", async () => {
  const { transport, owner } = await open({ keepAliveIntervalMs: 50, keepAliveTimeoutMs: 100 });
  const ping = await transport.next((f) => f.type === FrameType.Ping, "the Ping");
  assert.equal(ping.body.length, 8);
  assert.equal(ping.callId, 0);
  await waitFor(() => owner.closed !== null, "the keepalive close");
  assert.match(owner.closed!.message, /no answer to a keepalive Ping within 100 ms/);
});

test("keepalive: anything arriving counts as life, so a peer that answers keeps the connection", async () => {
  const { transport, owner } = await open({ keepAliveIntervalMs: 30, keepAliveTimeoutMs: 60 });
  let answered = 0;
  await waitFor(() => {
    const pings = transport.frames.filter((f) => f.type === FrameType.Ping);
    while (answered < pings.length) {
      transport.onData(frame(FrameType.Pong, 0, 0, pings[answered++]!.body));
    }
    return answered >= 5;
  }, "five Pings answered");
  assert.equal(owner.closed, null);
});
