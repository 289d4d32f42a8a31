// The single-file browser bundle: the client and @msgpack/msgpack as one ES module,
// dist/mux-rpc.browser.js, for a page that loads it with <script type="module"> or imports it.
import { build } from "esbuild";

await build({
  entryPoints: ["src/index.ts"],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  // Only Node reaches these (tcp:// and a Node without a global WebSocket); a browser never loads them.
  external: ["node:net", "ws"],
  outfile: "dist/mux-rpc.browser.js",
  sourcemap: true,
  logLevel: "warning",
});

// The browser test's page, served by the test server: the page, its script and the bundle it loads.
import { copyFileSync, mkdirSync } from "node:fs";
mkdirSync("build-test/browser", { recursive: true });
copyFileSync("test/browser/index.html", "build-test/browser/index.html");
copyFileSync("test/browser/page.js", "build-test/browser/page.js");
copyFileSync("dist/mux-rpc.browser.js", "build-test/browser/mux-rpc.js");
