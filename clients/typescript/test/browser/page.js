// Runs in the browser: calls the test server through MapMux with the client's single-file bundle
// (mux-rpc.js, a copy of dist/mux-rpc.browser.js), and leaves the results in window.muxResults for
// the test that drives the browser.
import { MuxClient, MuxError, StatusCode } from "./mux-rpc.js";

const S = "Mux.TypeScriptTests.ITestService.";
const SINK = "Mux.TypeScriptTests.IClientSink.";
const results = [];
const list = document.getElementById("results");

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function rejectsWith(promise, code) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof MuxError, `expected a MuxError, got ${e}`);
    check(e.statusCode === code, `expected status ${code}, got ${e.statusCode}: ${e.message}`);
    return e;
  }
  throw new Error(`expected a rejection with status ${code}`);
}

async function run(name, body) {
  const item = document.createElement("li");
  try {
    await body();
    results.push({ name, ok: true });
    item.textContent = `ok ${name}`;
  } catch (e) {
    results.push({ name, ok: false, error: String(e && e.stack ? e.stack : e) });
    item.textContent = `FAILED ${name}: ${e}`;
  }
  list.append(item);
}

const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/mux`;
const states = [];
let client;
const greeted = [];

try {
  await run("connects over WebSocket and reports its states", async () => {
    client = await MuxClient.connect(url, {
      onStateChange: (s) => states.push(s),
      handlers: { [SINK + "Greet"]: ([name]) => (greeted.push(name), `hello ${name}`) },
    });
    check(client.state === "connected", `state ${client.state}`);
    check(JSON.stringify(states) === '["connecting","connected"]', `states ${JSON.stringify(states)}`);
  });

  await run("unary call", async () => {
    check((await client.call(S + "Add", [2, 3])) === 5, "Add(2, 3) is not 5");
    check((await client.call(S + "Echo", ["héllo ✓"])) === "héllo ✓", "Echo changed the text");
  });

  await run("500 calls in flight", async () => {
    const sums = await Promise.all(Array.from({ length: 500 }, (_, i) => client.call(S + "Add", [i, i])));
    check(sums.every((s, i) => s === 2 * i), "a sum is wrong");
  });

  await run("unknown method", async () => {
    const e = await rejectsWith(client.call(S + "NoSuchMethod"), StatusCode.UnknownMethod);
    check(/no method with id 0x/.test(e.message), e.message);
  });

  await run("handler status and message", async () => {
    const e = await rejectsWith(client.call(S + "Fail", [StatusCode.NotFound, "no user 42"]), StatusCode.NotFound);
    check(e.message === "no user 42", e.message);
  });

  await run("server stream", async () => {
    const items = [];
    for await (const item of client.stream(S + "Range", [0, 150])) items.push(item);
    check(items.length === 150 && items[149] === 149, `got ${items.length} items`);
  });

  await run("client stream", async () => {
    async function* numbers() {
      for (let i = 1; i <= 200; i++) yield i;
    }
    check((await client.call(S + "Sum", ["plain", numbers()])) === 20100, "wrong sum");
  });

  await run("duplex stream", async () => {
    async function* words() {
      yield "a";
      yield "b";
    }
    const out = [];
    for await (const w of client.stream(S + "Shout", ["!", words()])) out.push(w);
    check(out.join() === "!A,!B", out.join());
  });

  await run("abort cancels the handler on the server", async () => {
    const key = `browser-abort-${Date.now()}`;
    const controller = new AbortController();
    const call = client.call(S + "Hang", [key], { signal: controller.signal });
    check(await client.call(S + "WasCanceled", ["started:" + key, 10000]), "the handler did not start");
    controller.abort();
    await rejectsWith(call, StatusCode.Canceled);
    check(await client.call(S + "WasCanceled", [key, 10000]), "the server's handler was not cancelled");
  });

  await run("leaving for await cancels the server's stream", async () => {
    const key = `browser-ticks-${Date.now()}`;
    let n = 0;
    for await (const _ of client.stream(S + "Ticks", [key])) if (++n === 3) break;
    check(await client.call(S + "WasCanceled", [key, 10000]), "the server's stream was not cancelled");
  });

  await run("deadline", async () => {
    await rejectsWith(client.call(S + "Hang", [`browser-deadline-${Date.now()}`], { timeoutMs: 200 }), StatusCode.DeadlineExceeded);
    const left = await client.call(S + "RemainingMs", [], { timeoutMs: 1500 });
    check(left > 500 && left <= 1500, `the server saw ${left} ms left`);
  });

  await run("metadata", async () => {
    const seen = await client.call(S + "Metadata", [], { metadata: { Tenant: "acme" } });
    check(JSON.stringify(seen) === '{"tenant":"acme"}', JSON.stringify(seen));
  });

  await run("call from the server to the page", async () => {
    check((await client.call(S + "CallClient", ["page"])) === "hello page", "wrong greeting");
    check(greeted.includes("page"), "the handler did not run");
  });

  await run("large messages in fragments both ways", async () => {
    const data = new Uint8Array(300000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 13) & 0xff;
    const back = await client.call(S + "EchoBytes", [data]);
    check(back.length === data.length && back.every((b, i) => b === data[i]), "the bytes came back changed");
  });

  await run("close", async () => {
    await client.close();
    check(client.state === "closed", `state ${client.state}`);
    await rejectsWith(client.call(S + "Add", [1, 1]), StatusCode.Unavailable);
  });
} finally {
  window.muxResults = results;
  document.title = "done";
}
