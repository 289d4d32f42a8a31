// A real headless Chromium loads a page from the test server, which calls it back through MapMux with
// the client's browser bundle; each check the page ran is reported here as a test.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import puppeteer, { type Browser } from "puppeteer-core";
import { TestServer } from "../server/harness.js";

const www = fileURLToPath(new URL("../../browser/", import.meta.url));
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

test("the client runs in headless Chromium against MapMux", async (t) => {
  const server = await TestServer.start(["--www", www]);
  const profile = mkdtempSync(join(tmpdir(), "mux-chromium-"));
  let browser: Browser | undefined;
  // One hook, in this order: Chromium must have exited before its profile is removed, and a failure
  // of one step must not leave the next undone (a live Chromium would keep this process running).
  t.after(async () => {
    try {
      await browser?.close();
    } finally {
      // Chromium's last helper processes may still write to the profile just after close: remove it
      // until it stays removed.
      for (let i = 0; i < 20 && existsSync(profile); i++) {
        rmSync(profile, { recursive: true, force: true });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await server.stop();
    }
  });
  assert.ok(server.httpUrl, "the test server serves no HTTP endpoint");
  browser = await puppeteer.launch({
    executablePath: chromium,
    // The flags are given as they are, --headless included (puppeteer's own would say --headless=new).
    headless: false,
    userDataDir: profile,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
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
