// Starts the .NET test server (test-server/) as a child process and reads the ports it prints.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const serverDll = fileURLToPath(new URL("../../../test-server/bin/Release/net10.0/Mux.TypeScriptTests.Server.dll", import.meta.url));

export class TestServer {
  private exited: Promise<number | null>;
  /** Lines the server wrote to stderr (its warnings), for a failing test's message. */
  readonly log: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly args: string[],
    readonly ports: Record<string, number>,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once("exit", (code) => resolve(code));
    });
    child.stderr!.on("data", (chunk: Buffer) => this.log.push(chunk.toString()));
  }

  /** Starts a server with the given arguments and waits for its "ready" line. */
  static async start(args: string[] = []): Promise<TestServer> {
    if (!existsSync(serverDll)) {
      throw new Error(`${serverDll} is missing: build it with dotnet build -c Release clients/typescript/test-server.`);
    }
    const child = spawn("dotnet", [serverDll, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    const ports: Record<string, number> = {};
    const lines = createInterface({ input: child.stdout! });
    const stderr: string[] = [];
    child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`The test server did not print "ready" within 60 s. ${stderr.join("")}`)), 60000);
      lines.on("line", (line) => {
        const match = /^([a-z-]+)-port=(\d+)$/.exec(line.trim());
        if (match) ports[match[1]!] = Number(match[2]);
        if (line.trim() === "ready") {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`The test server exited with ${code} before it was ready. ${stderr.join("")}`));
      });
    });
    return new TestServer(child, args, ports);
  }

  get tcpUrl(): string {
    return `tcp://127.0.0.1:${this.ports.tcp}`;
  }

  /** The WebSocket endpoint (MapMux), when the server serves one. */
  get wsUrl(): string | undefined {
    return this.ports.http === undefined ? undefined : `ws://127.0.0.1:${this.ports.http}/mux`;
  }

  get httpUrl(): string | undefined {
    return this.ports.http === undefined ? undefined : `http://127.0.0.1:${this.ports.http}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Stops gracefully (GoAway; calls in flight finish) and waits for the exit. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.stdin!.writable) {
      this.child.stdin!.write("stop\n");
    }
    await this.waitForExit();
  }

  /** Kills the process at once: its connections drop with no GoAway. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.waitForExit();
  }

  private async waitForExit(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.exited,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("The test server did not exit within 30 s.")), 30000);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Starts a new server on the same ports, as a restarted server would be. */
  async restart(): Promise<TestServer> {
    const args = this.args.filter((_, i, all) => !all[i]?.endsWith("-port") && !all[i - 1]?.endsWith("-port"));
    for (const [name, port] of Object.entries(this.ports)) {
      args.push(`--${name}-port`, String(port));
    }
    return TestServer.start(args);
  }
}
