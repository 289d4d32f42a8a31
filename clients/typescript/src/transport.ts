// Byte streams the frames ride on: TCP in Node (`tcp://host:port`), and WebSocket everywhere
// (`ws://`, `wss://`, subprotocol "mux"), where the frames are one byte stream cut into binary
// messages anywhere: a message boundary means nothing.

/** A reliable, ordered byte stream in both directions. */
export interface Transport {
  /** Queues bytes to send; the transport may keep the array, so the caller must not change it afterwards. */
  send(bytes: Uint8Array): void;
  /**
   * Closes the stream. Graceful: ends the send side and waits (at most 1 s) for the peer to close;
   * otherwise at once. Idempotent; `onClose` follows either way.
   */
  close(graceful: boolean): void;
  /** Called with each chunk received, in order; the chunk is not reused by the transport. */
  onData: (chunk: Uint8Array) => void;
  /** Called once when the stream has closed, with the error that closed it, if any. */
  onClose: (error: Error | undefined) => void;
}

/** The WebSocket constructor the client uses: the browser's, Node's global one, or the `ws` package's. */
export interface WebSocketConstructor {
  new (url: string, protocols?: string | string[]): WebSocketLike;
}

/** The part of the WHATWG WebSocket interface the client uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  /** The subprotocol the server chose ("" when none). */
  readonly protocol: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: { code: number; reason: string; wasClean?: boolean }) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}

const noop = () => {};
const SUBPROTOCOL = "mux";

/** Opens `url` (`ws://`, `wss://`, or in Node `tcp://host:port`); resolves once the stream is open. */
export async function openTransport(url: string, webSocket: WebSocketConstructor | undefined): Promise<Transport> {
  if (url.startsWith("tcp://")) {
    return openTcp(url);
  }
  if (url.startsWith("ws://") || url.startsWith("wss://")) {
    return openWebSocket(url, webSocket ?? (await defaultWebSocket()));
  }
  throw new TypeError(`Cannot connect to "${url}": a Mux address starts with ws://, wss:// or (in Node) tcp://.`);
}

async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global !== undefined) {
    return global;
  }
  try {
    // Node before 22 has no global WebSocket; the optional dependency `ws` has the same interface.
    const moduleName = "ws";
    const ws = (await import(/* @vite-ignore */ moduleName)) as { default?: WebSocketConstructor; WebSocket?: WebSocketConstructor };
    return (ws.WebSocket ?? ws.default)!;
  } catch (error) {
    throw new Error('This runtime has no WebSocket: install the "ws" package, or pass one as the webSocket option.', { cause: error });
  }
}

function openWebSocket(url: string, WebSocketClass: WebSocketConstructor): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocketClass(url, SUBPROTOCOL);
    socket.binaryType = "arraybuffer";
    let open = false;
    let closed = false;
    let error: Error | undefined;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const transport: Transport = {
      send(bytes) {
        if (!closed) {
          socket.send(bytes);
        }
      },
      close(graceful) {
        if (closed) {
          return;
        }
        if (graceful && socket.readyState === 1) {
          // A WebSocket has no half-close: its closing handshake is the graceful end of both directions.
          socket.close(1000);
          graceTimer = setTimeout(finish, 1000);
        } else {
          socket.close();
          finish();
        }
      },
      onData: noop,
      onClose: noop,
    };
    function finish() {
      if (closed) {
        return;
      }
      closed = true;
      if (graceTimer !== undefined) {
        clearTimeout(graceTimer);
      }
      socket.onmessage = null;
      transport.onClose(error);
    }
    socket.onopen = () => {
      if (socket.protocol !== SUBPROTOCOL) {
        // A server that does not choose "mux" is not a Mux endpoint, whatever it would answer to a Hello.
        error = new Error(`The WebSocket server at ${url} did not choose the subprotocol "${SUBPROTOCOL}" (it chose "${socket.protocol}"): it is not a Mux endpoint.`);
        socket.onclose = null;
        socket.close(1002);
        reject(error);
        return;
      }
      open = true;
      resolve(transport);
    };
    socket.onmessage = (event) => {
      const data = event.data;
      if (data instanceof ArrayBuffer) {
        transport.onData(new Uint8Array(data));
      } else if (ArrayBuffer.isView(data)) {
        transport.onData(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      } else {
        error = new Error("The WebSocket carried a text message; Mux frames ride only on binary messages.");
        socket.close(1003);
        finish();
      }
    };
    socket.onerror = (event) => {
      const message = (event as { message?: string }).message;
      error ??= new Error(`WebSocket error on ${url}${message ? `: ${message}` : ""}`);
    };
    socket.onclose = (event) => {
      if (!open) {
        reject(error ?? new Error(`The WebSocket to ${url} closed before it opened (code ${event.code}).`));
        return;
      }
      if (error === undefined && event.code !== 1000 && event.code !== 1005) {
        error = new Error(`The WebSocket closed with code ${event.code}${event.reason ? ` (${event.reason})` : ""}.`);
      }
      finish();
    };
  });
}

async function openTcp(url: string): Promise<Transport> {
  const parsed = new URL(url);
  const port = Number(parsed.port);
  if (!parsed.hostname || !Number.isInteger(port) || port <= 0) {
    throw new TypeError(`Cannot connect to "${url}": a TCP address is tcp://host:port.`);
  }
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const moduleName = "node:net";
  const net = (await import(/* @vite-ignore */ moduleName)) as typeof import("node:net");
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    socket.setNoDelay(true);
    let open = false;
    let closed = false;
    let error: Error | undefined;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const transport: Transport = {
      send(bytes) {
        if (!closed) {
          socket.write(bytes);
        }
      },
      close(graceful) {
        if (closed || socket.destroyed) {
          return;
        }
        if (graceful) {
          // End the send side and read (dropping) until the server closes, so no reset destroys what it still sends.
          socket.end();
          graceTimer = setTimeout(() => socket.destroy(), 1000);
        } else {
          socket.destroy();
        }
      },
      onData: noop,
      onClose: noop,
    };
    socket.once("connect", () => {
      open = true;
      resolve(transport);
    });
    socket.on("data", (chunk: Uint8Array) => transport.onData(chunk));
    socket.on("end", () => socket.end());
    socket.on("error", (e: Error) => {
      error ??= e;
    });
    socket.on("close", () => {
      if (graceTimer !== undefined) {
        clearTimeout(graceTimer);
      }
      if (!open) {
        reject(error ?? new Error(`The TCP connection to ${url} closed before it opened.`));
        return;
      }
      closed = true;
      transport.onClose(error);
    });
  });
}
