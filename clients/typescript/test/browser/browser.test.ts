// A real headless Chromium loads a page from the test server, which calls it back through MapMux with
// the client's browser bundle; each check the page ran is reported here as a test.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import puppeteer from "puppeteer-core";
import { TestServer } from "../server/harness.js";

const www = fileURLToPath(new URL("../../browser/", import.meta.url));
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

test("the client runs in headless Chromium against MapMux", async (t) => {
  const server = await TestServer.start(["--www", www]);
  t.after(() => server.stop());
  assert.ok(server.httpUrl, "the test server serves no HTTP endpoint");
  const profile = mkdtempSync(join(tmpdir(), "mux-chromium-"));
  t.after(() => rmSync(profile, { recursive: true, force: true }));
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const console: string[] = [];
  page.on("console", (message) => console.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => console.push(`pageerror: ${error}`));
  await page.goto(`${server.httpUrl}/index.html`);
  await page.waitForFunction("window.muxResults !== undefined", { timeout: 120000 }).catch((e: unknown) => {
    throw new Error(`The page reported no results: ${e}\n${console.join("\n")}`);
  });
  const results = (await page.evaluate("window.muxResults")) as { name: string; ok: boolean; error?: string }[];
  assert.ok(results.length >= 10, `the page ran ${results.length} checks:\n${console.join("\n")}`);
  for (const result of results) {
    await t.test(`browser: ${result.name}`, () => {
      assert.ok(result.ok, result.error ?? "failed");
    });
  }
});
