import type { Decoder } from "@msgpack/msgpack";
import { MuxError, StatusCode } from "./errors.js";

/** Where a call is: waiting to be sent, sent on a connection, or finished for its caller. */
export const enum CallState {
  Waiting = 0,
  Sent = 1,
  Done = 2,
}

/** What a call does to the connection it is sent on; implemented by the connection. */
export interface CallLink {
  /** Sends Cancel for the call (its answer is still awaited for the slot, then dropped). */
  cancel(call: OutgoingCall): void;
  /** Grants the server `count` more items of the call's stream. */
  grantCredit(call: OutgoingCall, count: number): void;
  /** Sends one item of the call's argument stream; throws when it cannot be encoded or is too large. */
  sendItem(call: OutgoingCall, item: unknown): void;
  /** Ends the call's argument stream: completed, or failed with `[code, message]`. */
  sendStreamEnd(call: OutgoingCall, failure: [number, string] | null): void;
}

/**
 * One call the client makes. The caller's side (a promise or a stream) completes exactly once, through
 * `complete` or `fail`; the connection keeps counting the call as outstanding until the server answers.
 */
export class OutgoingCall {
  state: CallState = CallState.Waiting;
  /** The connection the call was sent on, and its id there (0 while waiting). */
  link: CallLink | null = null;
  id = 0;
  /** How often the call was sent again after a GoAway said the server never ran it. */
  resends = 0;
  /** The metadata section's map, validated at the call (null when the call has none). */
  metadata: Record<string, string> | null = null;
  /** The argument stream's credit: items the server accepts before it grants more. */
  credit = 0;
  // Wakes the argument stream's producer when credit arrives or the call ends (null when it is not waiting).
  private creditWaiter: (() => void) | null = null;
  private iterator: AsyncIterator<unknown> | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private abortListener: (() => void) | null = null;
  private resolveUnary: ((value: unknown) => void) | null = null;
  private rejectUnary: ((error: unknown) => void) | null = null;
  /** The stream of results, for a call made with `stream`. */
  readonly results: ServerStream<unknown> | null;
  /** The unary call's promise. */
  readonly promise: Promise<unknown> | null;

  constructor(
    readonly method: string,
    readonly methodId: number,
    /** The arguments, without the stream argument. */
    readonly args: unknown[],
    /** The argument stream (client streaming), or null. */
    readonly source: AsyncIterable<unknown> | null,
    /** Whether the method returns a stream (the server sends StreamItems before its Response). */
    expectsStream: boolean,
    /** When the caller stops waiting, on `performance.now()`'s clock; Infinity for no deadline. */
    readonly deadline: number,
    readonly timeoutMs: number,
    readonly signal: AbortSignal | null,
    /** Says why the call could not be sent so far (the last connect failure), for a timeout's message. */
    private readonly whyNotSent: () => string,
  ) {
    if (expectsStream) {
      this.results = new ServerStream(this);
      this.promise = null;
    } else {
      this.results = null;
      this.promise = new Promise((resolve, reject) => {
        this.resolveUnary = resolve;
        this.rejectUnary = reject;
      });
    }
    if (deadline !== Infinity) {
      this.timer = setTimeout(() => this.onTimeout(), Math.max(0, deadline - performance.now()));
    }
    if (signal !== null) {
      this.abortListener = () => this.onAbort();
      signal.addEventListener("abort", this.abortListener, { once: true });
    }
  }

  get expectsStream(): boolean {
    return this.results !== null;
  }

  /** The server answered with a result (for a stream: the stream completed). */
  complete(value: unknown): void {
    if (this.state === CallState.Done) {
      return;
    }
    this.state = CallState.Done;
    this.release();
    if (this.results !== null) {
      this.results.end(null);
    } else {
      this.resolveUnary!(value);
    }
  }

  /** The call failed; when `cancelRemote` and it was sent, the server is told with a Cancel. */
  fail(error: unknown, cancelRemote: boolean): void {
    if (this.state === CallState.Done) {
      return;
    }
    const wasSent = this.state === CallState.Sent;
    this.state = CallState.Done;
    this.release();
    if (cancelRemote && wasSent) {
      this.link!.cancel(this);
    }
    if (this.results !== null) {
      this.results.end(error);
    } else {
      this.rejectUnary!(error);
    }
  }

  private release(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.abortListener !== null) {
      this.signal!.removeEventListener("abort", this.abortListener);
      this.abortListener = null;
    }
    this.wakeProducer();
    if (this.iterator !== null) {
      // The call is over: stop enumerating the caller's stream (its generator's finally blocks run).
      const iterator = this.iterator;
      this.iterator = null;
      iterator.return?.().then(undefined, () => {});
    }
  }

  /**
   * The call's deadline passed: seen by its own timer, or reported by the server (`serverMessage`,
   * whose DeadlineExceeded answer may beat the timer by a hair). Both fail the call the same way.
   */
  onTimeout(serverMessage?: string): void {
    const why = this.state === CallState.Waiting ? this.whyNotSent() : "";
    this.fail(
      new MuxError(StatusCode.DeadlineExceeded, `The call to ${this.method} timed out after ${this.timeoutMs} ms${why}.`, {
        notRun: this.state === CallState.Waiting,
        cause: serverMessage === undefined ? undefined : new MuxError(StatusCode.DeadlineExceeded, serverMessage),
      }),
      serverMessage === undefined,
    );
  }

  private onAbort(): void {
    this.fail(
      new MuxError(StatusCode.Canceled, `The call to ${this.method} was canceled.`, {
        cause: this.signal!.reason,
        notRun: this.state === CallState.Waiting,
      }),
      true,
    );
  }

  /** Sets the credit the server's HelloAck grants each stream, and starts sending the argument stream. */
  startProducer(window: number): void {
    this.credit = window;
    void this.produce();
  }

  /** The server granted `count` more items. */
  addCredit(count: number): void {
    this.credit += count;
    this.wakeProducer();
  }

  private wakeProducer(): void {
    const waiter = this.creditWaiter;
    if (waiter !== null) {
      this.creditWaiter = null;
      waiter();
    }
  }

  private async produce(): Promise<void> {
    const link = this.link!;
    let iterator: AsyncIterator<unknown>;
    try {
      iterator = this.source![Symbol.asyncIterator]();
    } catch (error) {
      this.producerFailed(link, error);
      return;
    }
    this.iterator = iterator;
    try {
      for (;;) {
        // The next item is taken before waiting for credit, so the stream's end needs none.
        const next = await iterator.next();
        if (this.state !== CallState.Sent) {
          return;
        }
        if (next.done) {
          this.iterator = null;
          link.sendStreamEnd(this, null);
          return;
        }
        while (this.credit === 0 && this.state === CallState.Sent) {
          await new Promise<void>((resolve) => (this.creditWaiter = resolve));
        }
        if (this.state !== CallState.Sent) {
          return;
        }
        this.credit--;
        link.sendItem(this, next.value);
      }
    } catch (error) {
      if (this.state === CallState.Sent) {
        this.iterator = null;
        this.producerFailed(link, error);
      }
    }
  }

  // The caller's stream threw: the server's handler sees the failure, the call is cancelled, and the
  // caller gets the producer's own error.
  private producerFailed(link: CallLink, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const code = error instanceof MuxError ? error.statusCode : StatusCode.HandlerFailed;
    link.sendStreamEnd(this, [code, message]);
    this.fail(error, true);
  }
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The server's stream of a call, read with `for await`. Items arrive as bytes, are decoded as they are
 * read, and are granted back to the server in batches of half the window. Leaving the loop early
 * cancels the call on the server.
 */
export class ServerStream<T> implements AsyncIterableIterator<T> {
  // Items received and not yet read, as MessagePack bytes; `head` is the next to read.
  private items: Uint8Array[] = [];
  private head = 0;
  private decoder: Decoder | null = null;
  private ended = false;
  private error: unknown = null;
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | null = null;
  // Items read since the last StreamCredit; granted back once half the window has been read.
  private readSinceCredit = 0;
  /** This side's window (the streamWindow of its Hello). */
  window = 64;

  constructor(private readonly call: OutgoingCall) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  /** Items held and not yet read. */
  get buffered(): number {
    return this.items.length - this.head;
  }

  /** An item arrived (its bytes are this stream's to keep). */
  push(bytes: Uint8Array, decoder: Decoder): void {
    if (this.ended) {
      return;
    }
    this.decoder = decoder;
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      this.deliver(bytes, waiter);
      return;
    }
    this.items.push(bytes);
  }

  /** The stream ended: completed (null) or failed; items already received are read first. */
  end(error: unknown): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    this.error = error;
    const waiter = this.waiter;
    if (waiter !== null && this.buffered === 0) {
      this.waiter = null;
      if (error !== null) {
        waiter.reject(error);
      } else {
        waiter.resolve(DONE);
      }
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.head < this.items.length) {
      const bytes = this.items[this.head]!;
      this.items[this.head++] = undefined!;
      if (this.head === this.items.length) {
        this.items.length = 0;
        this.head = 0;
      }
      return new Promise((resolve, reject) => this.deliver(bytes, { resolve, reject }));
    }
    if (this.ended) {
      if (this.error !== null) {
        const error = this.error;
        this.error = null;
        return Promise.reject(error);
      }
      return Promise.resolve(DONE);
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private deliver(bytes: Uint8Array, to: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }): void {
    let value: T;
    try {
      value = this.decoder!.decode(bytes) as T;
    } catch (error) {
      // An item that is not MessagePack fails the stream, as a response that cannot be read fails its call.
      const failure = new MuxError(StatusCode.InvalidArguments, `An item of ${this.call.method}'s stream could not be read: ${(error as Error).message}`, { cause: error });
      this.call.fail(failure, true);
      this.items.length = 0;
      this.head = 0;
      this.error = null;
      to.reject(failure);
      return;
    }
    this.grant();
    to.resolve({ done: false, value });
  }

  // Gives the server back credit for what was read, half a window at a time, so a reader that keeps
  // up never stalls the server's producer.
  private grant(): void {
    if (this.ended || this.call.link === null) {
      return;
    }
    this.readSinceCredit++;
    if (this.readSinceCredit >= Math.max(1, this.window >>> 1)) {
      this.call.link.grantCredit(this.call, this.readSinceCredit);
      this.readSinceCredit = 0;
    }
  }

  /** Leaving `for await` early: the call is cancelled on the server. */
  return(): Promise<IteratorResult<T>> {
    this.call.fail(new MuxError(StatusCode.Canceled, `The stream of ${this.call.method} was left before it ended.`), true);
    this.items.length = 0;
    this.head = 0;
    this.error = null;
    return Promise.resolve(DONE);
  }

  throw(error?: unknown): Promise<IteratorResult<T>> {
    this.call.fail(error, true);
    this.items.length = 0;
    this.head = 0;
    this.error = null;
    return Promise.reject(error);
  }
}
