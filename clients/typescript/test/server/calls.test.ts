// Every call shape against a real Mux server (the .NET test server), over TCP and, where the server
// serves it, WebSocket.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MuxClient, MuxError, StatusCode, type MuxClientOptions } from "../../src/index.js";
import { waitFor, within } from "../helpers.js";
import { TestServer } from "./harness.js";

const S = "Mux.TypeScriptTests.ITestService.";
const SINK = "Mux.TypeScriptTests.IClientSink.";

const server = await TestServer.start();
after(() => server.stop());

const urls: [string, string][] = [["tcp", server.tcpUrl]];
if (server.wsUrl !== undefined) {
  urls.push(["websocket", server.wsUrl]);
}

let keys = 0;
const key = (name: string) => `${name}-${process.pid}-${++keys}`;

async function* numbers(count: number) {
  for (let i = 1; i <= count; i++) {
    yield i;
  }
}

function isMuxError(code: number, message?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof MuxError, `expected a MuxError, got ${e}`);
    assert.equal(e.statusCode, code, `status of: ${e.message}`);
    if (message) assert.match(e.message, message);
    return true;
  };
}

for (const [transport, url] of urls) {
  describe(transport, () => {
    let client: MuxClient;
    const greeted: string[] = [];
    let clientWaitAborted = false;
    const connect = (options: MuxClientOptions = {}) => MuxClient.connect(url, options);

    before(async () => {
      client = await connect({
        handlers: {
          [SINK + "Greet"]: ([name]) => (greeted.push(name as string), `hello ${name}`),
          [SINK + "Wait"]: (_args, context) =>
            new Promise((resolve) =>
              context.signal.addEventListener("abort", () => {
                clientWaitAborted = true;
                resolve("aborted");
              }),
            ),
        },
      });
    });
    after(() => client.close());

    test("unary calls answer with their results", async () => {
      assert.equal(await client.call<number>(S + "Add", [2, 3]), 5);
      assert.equal(await client.call<string>(S + "Echo", ["héllo wörld ✓"]), "héllo wörld ✓");
      assert.equal(typeof (await client.call<number>(S + "ProcessId")), "number");
    });

    test("many calls in flight at once, beyond the server's 1000 call slots, all complete", async () => {
      const sums = await within(Promise.all(Array.from({ length: 2500 }, (_, i) => client.call<number>(S + "Add", [i, 1]))), "2500 calls", 60000);
      assert.deepEqual(sums, Array.from({ length: 2500 }, (_, i) => i + 1));
    });

    test("an unknown method fails with UnknownMethod and the server's message", async () => {
      await assert.rejects(client.call(S + "NoSuchMethod", [1]), isMuxError(StatusCode.UnknownMethod, /no method with id 0x[0-9a-f]{8}/));
    });

    test("a handler's status and message reach the caller; a plain exception is HandlerFailed", async () => {
      await assert.rejects(client.call(S + "Fail", [StatusCode.NotFound, "no user 42"]), (e: unknown) => {
        isMuxError(StatusCode.NotFound)(e);
        assert.equal((e as MuxError).message, "no user 42");
        assert.equal((e as MuxError).status, "NotFound");
        return true;
      });
      await assert.rejects(client.call(S + "Throw", ["secret detail"]), isMuxError(StatusCode.HandlerFailed));
    });

    test("a server stream is read with for await, beyond one window of items", async () => {
      const items: number[] = [];
      for await (const item of client.stream<number>(S + "Range", [10, 300])) {
        items.push(item);
      }
      assert.deepEqual(items, Array.from({ length: 300 }, (_, i) => 10 + i));
    });

    test("a server stream that fails yields its items, then throws the status", async () => {
      const items: number[] = [];
      await assert.rejects(async () => {
        for await (const item of client.stream<number>(S + "RangeThenFail", [3])) {
          items.push(item);
        }
      }, isMuxError(StatusCode.NotFound, /nothing after 3/));
      assert.deepEqual(items, [0, 1, 2]);
    });

    test("leaving for await early cancels the server's stream", async () => {
      const k = key("ticks");
      let seen = 0;
      for await (const _ of client.stream<number>(S + "Ticks", [k])) {
        if (++seen === 5) break;
      }
      assert.equal(await client.call(S + "WasCanceled", [k, 10000]), true);
    });

    test("aborting a stream's signal ends it with Canceled and cancels the server's stream", async () => {
      const k = key("ticks-abort");
      const controller = new AbortController();
      await assert.rejects(async () => {
        for await (const item of client.stream<number>(S + "Ticks", [k], { signal: controller.signal })) {
          if (item === 3) controller.abort();
        }
      }, isMuxError(StatusCode.Canceled));
      assert.equal(await client.call(S + "WasCanceled", [k, 10000]), true);
    });

    test("a client stream: an AsyncIterable argument, beyond one window of items", async () => {
      assert.equal(await client.call(S + "Sum", ["plain", numbers(1000)]), 500500);
      assert.equal(await client.call(S + "Sum", ["negate", numbers(10)]), -55);
    });

    test("a client stream whose producer fails rejects with that error, and the handler sees the failure", async () => {
      const boom = new Error("the producer broke");
      async function* failing() {
        yield "a";
        yield "b";
        throw boom;
      }
      const k = key("collect");
      await assert.rejects(client.call(S + "Collect", [k, failing()]), (e: unknown) => e === boom);
      assert.equal(await client.call(S + "WasCanceled", [k, 10000]), true, "the handler's stream ended with the failure");
      assert.equal(await client.call(S + "Collect", [key("collect"), (async function* () { yield "x"; yield "y"; })()]), "x,y");
    });

    test("a duplex call streams both ways", async () => {
      async function* words() {
        yield "one";
        yield "two";
        yield "three";
      }
      const out: string[] = [];
      for await (const word of client.stream<string>(S + "Shout", [">", words()])) {
        out.push(word);
      }
      assert.deepEqual(out, [">ONE", ">TWO", ">THREE"]);
    });

    test("an abort rejects with Canceled and cancels the handler on the server", async () => {
      const k = key("hang");
      const controller = new AbortController();
      const call = client.call(S + "Hang", [k], { signal: controller.signal });
      assert.equal(await client.call(S + "WasCanceled", ["started:" + k, 10000]), true, "the handler started");
      controller.abort();
      await assert.rejects(call, isMuxError(StatusCode.Canceled, /was canceled/));
      assert.equal(await client.call(S + "WasCanceled", [k, 10000]), true, "the server's handler saw the Cancel");
    });

    test("a deadline rejects with DeadlineExceeded, and the server's handler is cancelled too", async () => {
      const k = key("deadline");
      const started = performance.now();
      await assert.rejects(client.call(S + "Hang", [k], { timeoutMs: 300 }), isMuxError(StatusCode.DeadlineExceeded, /timed out after 300 ms/));
      const elapsed = performance.now() - started;
      assert.ok(elapsed >= 290 && elapsed < 5000, `rejected after ${elapsed} ms`);
      assert.equal(await client.call(S + "WasCanceled", [k, 10000]), true);
    });

    test("the deadline travels to the server: it sees what is left of timeoutMs", async () => {
      const left = await client.call<number>(S + "RemainingMs", [], { timeoutMs: 1500 });
      assert.ok(left > 500 && left <= 1500, `the server saw ${left} ms left`);
      assert.equal(await client.call<number>(S + "RemainingMs", [], { timeoutMs: 0 }), -1);
      const byDefault = await client.call<number>(S + "RemainingMs");
      assert.ok(byDefault > 20000 && byDefault <= 30000, `the default timeout left ${byDefault} ms`);
    });

    test("the client's default timeoutMs applies to every call", async () => {
      const short = await connect({ timeoutMs: 200 });
      try {
        await assert.rejects(short.call(S + "Hang", [key("default")]), isMuxError(StatusCode.DeadlineExceeded, /after 200 ms/));
      } finally {
        await short.close();
      }
    });

    test("metadata reaches the handler, keys lower-cased", async () => {
      const seen = await client.call(S + "Metadata", [], { metadata: { Tenant: "acme", "x-request-id": "r-1", empty: "" } });
      assert.deepEqual(seen, { tenant: "acme", "x-request-id": "r-1", empty: "" });
      assert.deepEqual(await client.call(S + "Metadata"), {});
    });

    test("the server calls the client's handler on the same connection", async () => {
      assert.equal(await client.call(S + "CallClient", ["ada"]), "hello ada");
      assert.ok(greeted.includes("ada"));
    });

    test("the server's Cancel of its call aborts the client handler's signal", async () => {
      clientWaitAborted = false;
      assert.equal(await client.call(S + "CallClientAndCancel", [200]), "canceled");
      await waitFor(() => clientWaitAborted, "the client handler's abort");
    });

    test("the server's call to a method the client does not serve gets UnknownMethod", async () => {
      const answer = await client.call<string>(S + "CallClientUnknown");
      assert.match(answer, /^UnknownMethod: The client does not serve method id 0x[0-9a-f]{8}/);
    });

    test("large messages go in fragments both ways", async () => {
      const small = await connect({ fragmentSize: 4096 });
      try {
        const data = new Uint8Array(300000);
        for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;
        const [a, b] = await Promise.all([small.call<Uint8Array>(S + "EchoBytes", [data]), small.call<number>(S + "Add", [1, 2])]);
        assert.deepEqual(a, data);
        assert.equal(b, 3);
      } finally {
        await small.close();
      }
    });

    test("an answer over the client's maxMessageSize fails that call only", async () => {
      const limited = await connect({ maxMessageSize: 64 * 1024 });
      try {
        await assert.rejects(limited.call(S + "EchoBytes", [new Uint8Array(100000)]), isMuxError(StatusCode.MessageTooLarge));
        assert.equal(await limited.call(S + "Add", [20, 22]), 42);
      } finally {
        await limited.close();
      }
    });
  });
}
