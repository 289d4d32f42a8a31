// The client over real TCP against a raw peer that the test plays: GoAway, call slots, reconnect, close.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MuxClient, MuxError, StatusCode, type MuxClientState } from "../../src/index.js";
import { FrameType } from "../../src/protocol.js";
import { waitFor, within } from "../helpers.js";
import { RawPeer, decoder, frame, helloAck } from "./fakes.js";

const ADD = "Mux.Samples.Contracts.IUserService.Add";

async function connect(peer: RawPeer, options: Parameters<typeof MuxClient.connect>[1] = {}, ack = helloAck()) {
  const states: MuxClientState[] = [];
  const pending = MuxClient.connect(peer.url, { ...options, onStateChange: (s) => states.push(s) });
  const first = await peer.accept(0, ack);
  const client = await within(pending, "the connect");
  return { client, first, states };
}

test("GoAway: a call above its id is sent again on a new connection, one up to it completes on the old", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first, states } = await connect(peer);
  t.after(() => client.close());
  const kept = client.call(ADD, [1, 1]);
  const moved = client.call(ADD, [2, 2]);
  await first.next((f) => f.type === FrameType.Request && f.callId === 2, "both requests");
  first.send(frame(FrameType.GoAway, 0, 0, [1, 0, 0, 0]));
  const second = await peer.accept(1);
  const resent = await second.next((f) => f.type === FrameType.Request, "the resent request");
  assert.deepEqual(decoder.decode(resent.body.subarray(8)), [2, 2]);
  second.send(frame(FrameType.Response, 0, resent.callId, [0x04]));
  assert.equal(await moved, 4);
  first.send(frame(FrameType.Response, 0, 1, [0x02]));
  assert.equal(await kept, 2);
  await waitFor(() => first.closed, "the drained connection's close");
  assert.deepEqual(states, ["connecting", "connected", "reconnecting", "connected"]);
  assert.equal(first.frames.filter((f) => f.type === FrameType.Request).length, 2, "nothing new on the connection that went away");
});

test("the server's maxConcurrentCalls: a call beyond it waits for an answer before it is sent", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first } = await connect(peer, {}, helloAck({ maxConcurrentCalls: 2 }));
  t.after(() => client.close());
  const calls = [client.call(ADD, [1, 0]), client.call(ADD, [2, 0]), client.call(ADD, [3, 0])];
  await first.next((f) => f.type === FrameType.Request && f.callId === 2, "two requests");
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(first.frames.filter((f) => f.type === FrameType.Request).length, 2);
  first.send(frame(FrameType.Response, 0, 1, [0x01]));
  const third = await first.next((f) => f.type === FrameType.Request && f.callId === 3, "the third request");
  assert.deepEqual(decoder.decode(third.body.subarray(8)), [3, 0]);
  first.send(frame(FrameType.Response, 0, 2, [0x02]));
  first.send(frame(FrameType.Response, 0, 3, [0x03]));
  assert.deepEqual(await Promise.all(calls), [1, 2, 3]);
});

test("a call aborted while it waits for a slot is never sent, and says so", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first } = await connect(peer, {}, helloAck({ maxConcurrentCalls: 1 }));
  t.after(() => client.close());
  const running = client.call(ADD, [1, 0]);
  const controller = new AbortController();
  const waiting = client.call(ADD, [2, 0], { signal: controller.signal });
  await first.next((f) => f.type === FrameType.Request, "the first request");
  controller.abort();
  await assert.rejects(waiting, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Canceled && e.notRun);
  first.send(frame(FrameType.Response, 0, 1, [0x01]));
  assert.equal(await running, 1);
  const after = client.call(ADD, [3, 0]);
  const next = await first.next((f) => f.type === FrameType.Request && f.callId === 2, "the next request");
  assert.deepEqual(decoder.decode(next.body.subarray(8)), [3, 0], "the aborted call was skipped");
  first.send(frame(FrameType.Response, 0, 2, [0x03]));
  assert.equal(await after, 3);
  assert.equal(first.frames.filter((f) => f.type === FrameType.Cancel).length, 0);
});

test("an aborted call that was sent sends Cancel, and rejects with Canceled at once", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first } = await connect(peer);
  t.after(() => client.close());
  const controller = new AbortController();
  const call = client.call(ADD, [1, 0], { signal: controller.signal });
  await first.next((f) => f.type === FrameType.Request, "the request");
  controller.abort(new Error("user gave up"));
  await assert.rejects(call, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Canceled && !e.notRun && (e.cause as Error).message === "user gave up");
  const cancel = await first.next((f) => f.type === FrameType.Cancel, "the Cancel");
  assert.equal(cancel.callId, 1);
  assert.equal(cancel.body.length, 0);
});

test("a lost connection fails the calls sent on it, reconnects, and sends the calls made meanwhile", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first, states } = await connect(peer, { reconnectMinDelayMs: 10 });
  t.after(() => client.close());
  const lost = client.call(ADD, [1, 0]);
  await first.next((f) => f.type === FrameType.Request, "the request");
  first.socket.destroy();
  await assert.rejects(lost, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Unavailable && !e.notRun && /was lost/.test(e.message));
  const later = client.call(ADD, [5, 0]);
  const second = await peer.accept(1);
  const request = await second.next((f) => f.type === FrameType.Request, "the request on the new connection");
  second.send(frame(FrameType.Response, 0, request.callId, [0x05]));
  assert.equal(await later, 5);
  assert.deepEqual(states, ["connecting", "connected", "reconnecting", "connected"]);
});

test("a call waiting for a connection times out naming the last connect failure", async (t) => {
  const peer = await RawPeer.listen();
  const { client, first } = await connect(peer, { reconnectMinDelayMs: 10, reconnectMaxDelayMs: 20 });
  t.after(() => client.close());
  await peer.close(); // refuses every reconnect from now on
  await waitFor(() => first.closed && client.state === "reconnecting", "the reconnecting state");
  await assert.rejects(client.call(ADD, [1, 0], { timeoutMs: 300 }), (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.DeadlineExceeded && e.notRun && /timed out after 300 ms waiting for a connection \(the last attempt failed: /.test(e.message));
});

test("close fails the calls still running and those waiting, and later calls at once", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const states: MuxClientState[] = [];
  const { client, first } = await connect(peer, { onStateChange: (s) => states.push(s) }, helloAck({ maxConcurrentCalls: 1 }));
  const running = client.call(ADD, [1, 0]);
  const waiting = client.call(ADD, [2, 0]);
  await first.next((f) => f.type === FrameType.Request, "the request");
  const closing = client.close();
  await assert.rejects(running, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Unavailable && /closed by this client/.test(e.message));
  await assert.rejects(waiting, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Unavailable && e.notRun);
  first.socket.end();
  await within(closing, "the close");
  assert.equal(client.state, "closed");
  await assert.rejects(client.call(ADD, [3, 0]), (e: unknown) => e instanceof MuxError && /is closed/.test(e.message));
});

test("connect rejects when nothing listens, and the client ends closed", async () => {
  const peer = await RawPeer.listen();
  const url = peer.url;
  await peer.close();
  const states: MuxClientState[] = [];
  await assert.rejects(MuxClient.connect(url, { onStateChange: (s) => states.push(s) }), (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Unavailable && /Could not connect/.test(e.message));
  assert.deepEqual(states, ["connecting", "closed"]);
});

async function* numbers() {
  yield 1;
}

test("a call's metadata, timeout and stream arguments are checked at the call, naming the fault", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client } = await connect(peer);
  t.after(() => client.close());
  await assert.rejects(client.call(ADD, [], { metadata: { "Mux-Trace": "x" } }), (e: unknown) => e instanceof TypeError && /reserved for Mux/.test(e.message));
  await assert.rejects(client.call(ADD, [], { metadata: { a: "1", A: "2" } }), (e: unknown) => e instanceof TypeError && /appears twice/.test(e.message));
  await assert.rejects(client.call(ADD, [], { metadata: { "has space": "1" } }), (e: unknown) => e instanceof TypeError && /printable ASCII/.test(e.message));
  await assert.rejects(client.call(ADD, [], { timeoutMs: 2 ** 32 }), (e: unknown) => e instanceof RangeError && /timeoutMs of .* is 4294967296/.test(e.message));
  await assert.rejects(client.call(ADD, [numbers(), numbers()]), (e: unknown) => e instanceof TypeError && /two stream arguments/.test(e.message));
});

test("a server's connection-level Error closes the connection and fails its calls with that code", async (t) => {
  const peer = await RawPeer.listen();
  t.after(() => peer.close());
  const { client, first } = await connect(peer, { reconnect: false });
  const call = client.call(ADD, [1, 0]);
  await first.next((f) => f.type === FrameType.Request, "the request");
  first.send(frame(FrameType.Error, 0, 0, new Uint8Array([0x93, 0x07, 0xa3, 0x62, 0x61, 0x64, 0xc0])));
  await assert.rejects(call, (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.ProtocolError && /closed the connection \(ProtocolError\): bad/.test(e.message));
  await waitFor(() => client.state === "closed", "the closed state (no reconnect)");
});

test("options out of range are refused, naming the option and its range", async () => {
  await assert.rejects(MuxClient.connect("tcp://127.0.0.1:1", { fragmentSize: 100 }), (e: unknown) => e instanceof RangeError && /fragmentSize is 100; it must be a whole number from 1024 to 16777216/.test(e.message));
  await assert.rejects(MuxClient.connect("tcp://127.0.0.1:1", { maxMessageSize: 2 ** 32 }), (e: unknown) => e instanceof RangeError && /maxMessageSize/.test(e.message));
  await assert.rejects(MuxClient.connect("http://127.0.0.1:1"), (e: unknown) => e instanceof MuxError && /starts with ws:\/\/, wss:\/\/ or \(in Node\) tcp:\/\//.test(e.message));
});
