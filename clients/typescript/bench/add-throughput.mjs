// Throughput of one client connection: `--in-flight` callers (default 200) each call Add in a loop
// for `--seconds` (default 5, after a 1 s warm-up), and the script prints the calls per second.
//
//   node bench/add-throughput.mjs                          starts the test server, over TCP
//   node bench/add-throughput.mjs --transport websocket    the same over WebSocket (MapMux)
//   node bench/add-throughput.mjs --url tcp://host:port --method Mux.Samples.Contracts.IUserService.Add
//
// Needs `npm run build` (and, without --url, the .NET test server built: dotnet build -c Release test-server).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { MuxClient } from "../dist/index.js";

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const seconds = Number(option("seconds", "5"));
const inFlight = Number(option("in-flight", "200"));
const transport = option("transport", "tcp");
const method = option("method", "Mux.TypeScriptTests.ITestService.Add");
let url = option("url", undefined);
let server;

if (url === undefined) {
  const dll = fileURLToPath(new URL("../test-server/bin/Release/net10.0/Mux.TypeScriptTests.Server.dll", import.meta.url));
  server = spawn("dotnet", [dll], { stdio: ["pipe", "pipe", "inherit"] });
  const ports = {};
  await new Promise((resolve, reject) => {
    createInterface({ input: server.stdout }).on("line", (line) => {
      const m = /^([a-z]+)-port=(\d+)$/.exec(line);
      if (m) ports[m[1]] = m[2];
      if (line === "ready") resolve();
    });
    server.once("exit", (code) => reject(new Error(`the test server exited with ${code}`)));
  });
  url = transport === "tcp" ? `tcp://127.0.0.1:${ports.tcp}` : `ws://127.0.0.1:${ports.http}/mux`;
}

const client = await MuxClient.connect(url);
let calls = 0;
let errors = 0;
let running = true;

async function caller(seed) {
  let a = seed;
  while (running) {
    try {
      // A wrong sum counts as an error, so a figure is never made of calls that did not happen.
      if ((await client.call(method, [a, 1])) === a + 1) calls++;
      else errors++;
    } catch {
      errors++;
    }
    a = (a + 1) & 0xffff;
  }
}

const callers = Array.from({ length: inFlight }, (_, i) => caller(i));
await new Promise((resolve) => setTimeout(resolve, 1000));
const startCalls = calls;
const start = performance.now();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
const measured = calls - startCalls;
const elapsed = (performance.now() - start) / 1000;
running = false;
await Promise.all(callers);
await client.close();
server?.stdin.end();

console.log(`${transport === "tcp" || url.startsWith("tcp") ? "tcp" : "websocket"} ${url}: ${inFlight} in flight, ${measured} calls in ${elapsed.toFixed(2)} s = ${Math.round(measured / elapsed)} calls/s, ${errors} errors`);
process.exitCode = errors > 0 ? 1 : 0;
