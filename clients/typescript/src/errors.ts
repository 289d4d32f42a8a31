/** The protocol's status codes (docs/protocol.md, *Error codes*). */
export const StatusCode = {
  HandlerFailed: 1,
  UnknownMethod: 2,
  InvalidArguments: 3,
  Canceled: 4,
  FrameTooLarge: 5,
  ServerShuttingDown: 6,
  ProtocolError: 7,
  TooManyCalls: 8,
  NotFound: 9,
  PermissionDenied: 10,
  Unauthenticated: 11,
  FailedPrecondition: 12,
  Unavailable: 13,
  DeadlineExceeded: 14,
  MessageTooLarge: 15,
} as const;

export type StatusCodeName = keyof typeof StatusCode;

const names: Record<number, StatusCodeName> = {};
for (const [name, code] of Object.entries(StatusCode)) {
  names[code] = name as StatusCodeName;
}

/** The name of a status code, or `Status<n>` for a code this client does not know. */
export function statusName(code: number): string {
  return names[code] ?? `Status${code}`;
}

/**
 * How a call (or a connect) failed. `statusCode` is the protocol's status number: the server's, or one
 * the client chose for what it saw itself: `Canceled` (4) for an abort, `DeadlineExceeded` (14) for a
 * timeout, `Unavailable` (13) when the connection was lost or closed.
 */
export class MuxError extends Error {
  override name = "MuxError";

  constructor(
    /** The protocol's status number (see {@link StatusCode}). */
    readonly statusCode: number,
    message: string,
    options?: {
      /** The .NET type name of the remote exception, when the server sent it. */
      remoteType?: string | null;
      /** True when the server never ran the call, so retrying it cannot run it twice. */
      notRun?: boolean;
      cause?: unknown;
    },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.remoteType = options?.remoteType ?? null;
    this.notRun = options?.notRun ?? false;
  }

  /** The .NET type name of the remote exception, when the server sent it (only with detailed errors). */
  readonly remoteType: string | null;

  /** True when the server never ran the call (it came after a GoAway's id, or was never sent): safe to retry. */
  readonly notRun: boolean;

  /** The status code's name, such as `UnknownMethod`. */
  get status(): string {
    return statusName(this.statusCode);
  }
}
