// Runs the client's three test layers in order and ends with one plain line, "N passed, N failed":
//   unit     framing, fragments and the connection against docs/protocol.md's bytes and a raw peer;
//   server   every call shape against the real .NET test server (test-server/), over TCP and WebSocket;
//   browser  headless Chromium loads a page that calls the test server through MapMux.
// Expects `npm run build` first; builds the .NET test server itself unless --no-dotnet-build is given.
// Exits non-zero when any test fails (or none ran).
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";

process.chdir(new URL("..", import.meta.url).pathname);
const layers = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const wanted = layers.length > 0 ? layers : ["unit", "server", "browser"];

if (!process.argv.includes("--no-dotnet-build") && wanted.some((l) => l !== "unit")) {
  execFileSync("dotnet", ["build", "-c", "Release", "--nologo", "-v", "q", "test-server"], { stdio: "inherit" });
}

const totals = { passed: 0, failed: 0, skipped: 0 };
for (const layer of wanted) {
  const dir = join("build-test", "test", layer);
  const files = readdirSync(dir).filter((f) => f.endsWith(".test.js")).map((f) => join(dir, f));
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const started = performance.now();
  // One file at a time: the server and browser files each start their own .NET server on 2 cores.
  // A stuck file fails after its layer's limit instead of holding CI.
  const stream = run({ files, concurrency: 1, timeout: (layer === "unit" ? 2 : layer === "browser" ? 3 : 5) * 60 * 1000 });
  stream.on("test:pass", (event) => {
    if (event.details?.type === "suite") return;
    if (event.skip || event.todo) counts.skipped++;
    else counts.passed++;
  });
  stream.on("test:fail", (event) => {
    if (event.details?.type === "suite") return;
    counts.failed++;
  });
  await new Promise((resolve, reject) => {
    const out = stream.compose(spec);
    out.on("data", (chunk) => process.stdout.write(chunk));
    out.on("end", resolve);
    out.on("error", reject);
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`${layer}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped (${seconds} s)`);
  totals.passed += counts.passed;
  totals.failed += counts.failed;
  totals.skipped += counts.skipped;
}

console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exitCode = totals.failed > 0 || totals.passed === 0 ? 1 : 0;
