// The connection's life against a real Mux server: restart and reconnect, GoAway, keepalive, auth.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MuxClient, MuxError, StatusCode, type MuxClientState } from "../../src/index.js";
import { waitFor, within } from "../helpers.js";
import { TestServer } from "./harness.js";

const S = "Mux.TypeScriptTests.ITestService.";

/** The transports a server of the given arguments serves, as [name, url of a server]. */
function urlsOf(server: TestServer): [string, (s: TestServer) => string][] {
  const urls: [string, (s: TestServer) => string][] = [["tcp", (s) => s.tcpUrl]];
  if (server.wsUrl !== undefined) urls.push(["websocket", (s) => s.wsUrl!]);
  return urls;
}

const probe = await TestServer.start();
const transports = urlsOf(probe);
await probe.stop();

for (const [transport, urlOf] of transports) {
  test(`${transport}: a killed server's calls fail, the client reconnects to the restarted server, and calls made meanwhile go there`, async (t) => {
    let server = await TestServer.start();
    t.after(() => server.kill());
    const states: MuxClientState[] = [];
    const client = await MuxClient.connect(urlOf(server), { onStateChange: (s) => states.push(s), reconnectMinDelayMs: 50, reconnectMaxDelayMs: 500 });
    t.after(() => client.close());
    const firstPid = await client.call<number>(S + "ProcessId");
    const inFlight = assert.rejects(client.call(S + "Slow", [60000]), (e: unknown) => e instanceof MuxError && e.statusCode === StatusCode.Unavailable && !e.notRun);
    await server.kill();
    await inFlight;
    await waitFor(() => client.state === "reconnecting", "the reconnecting state");
    const madeWhileDown = client.call<number>(S + "Add", [40, 2], { timeoutMs: 60000 });
    server = await server.restart();
    assert.equal(await within(madeWhileDown, "the call made while the server was down", 60000), 42);
    assert.notEqual(await client.call<number>(S + "ProcessId"), firstPid);
    assert.equal(client.state, "connected");
    assert.deepEqual(states.slice(0, 3), ["connecting", "connected", "reconnecting"]);
    assert.equal(states.at(-1), "connected");
  });

  test(`${transport}: a graceful stop (GoAway) lets the call in flight finish, and the client moves to the restarted server`, async (t) => {
    let server = await TestServer.start();
    t.after(() => server.kill());
    const client = await MuxClient.connect(urlOf(server), { reconnectMinDelayMs: 50, reconnectMaxDelayMs: 500 });
    t.after(() => client.close());
    const inFlight = client.call<string>(S + "Slow", [1500]);
    // The Slow call is running once another call on the same connection has been answered after it.
    assert.equal(await client.call(S + "Add", [1, 1]), 2);
    const stopped = server.stop();
    assert.equal(await within(inFlight, "the promised call"), "slept 1500");
    await stopped;
    await waitFor(() => client.state === "reconnecting", "the reconnecting state");
    server = await server.restart();
    assert.equal(await client.call(S + "Add", [2, 2], { timeoutMs: 60000 }), 4);
    assert.equal(client.state, "connected");
  });

  test(`${transport}: the server's keepalive Pings are answered, so a quiet connection stays open`, async (t) => {
    // A Ping after 400 quiet ms; no answer within 1 s would close the connection.
    const server = await TestServer.start(["--keepalive-ms", "400", "--keepalive-timeout-ms", "1000"]);
    t.after(() => server.stop());
    const states: MuxClientState[] = [];
    const client = await MuxClient.connect(urlOf(server), { onStateChange: (s) => states.push(s) });
    t.after(() => client.close());
    // Quiet for 3 s: an unanswered Ping would have closed the connection after 1.4 s.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal(await client.call(S + "ConnectionsAccepted"), 1);
    assert.deepEqual(states, ["connecting", "connected"]);
  });

  test(`${transport}: the client's own keepalive Pings are answered by the server`, async (t) => {
    const server = await TestServer.start();
    t.after(() => server.stop());
    const states: MuxClientState[] = [];
    const client = await MuxClient.connect(urlOf(server), { keepAliveIntervalMs: 50, keepAliveTimeoutMs: 1000, onStateChange: (s) => states.push(s) });
    t.after(() => client.close());
    // Quiet for 2.5 s: an unanswered Ping would have closed the connection after about 1.05 s.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(await client.call(S + "ConnectionsAccepted"), 1);
    assert.deepEqual(states, ["connecting", "connected"]);
  });

  test(`${transport}: a server that requires a token accepts the right one and refuses a wrong one, naming why`, async (t) => {
    const server = await TestServer.start(["--auth-token", "let-me-in"]);
    t.after(() => server.stop());
    const client = await MuxClient.connect(urlOf(server), { authToken: "let-me-in" });
    assert.equal(await client.call(S + "Add", [1, 2]), 3);
    await client.close();
    await assert.rejects(MuxClient.connect(urlOf(server), { authToken: "wrong" }), (e: unknown) => {
      assert.ok(e instanceof MuxError);
      assert.match(e.message, /refused the connection/);
      assert.ok(e.statusCode === StatusCode.ProtocolError || e.statusCode === StatusCode.Unauthenticated, e.message);
      return true;
    });
  });
}
