// Shared by the test layers: waiting for a condition with a deadline, and bytes written as in docs/protocol.md.

/** Resolves once `condition()` holds; rejects naming `what` when it does not within `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > timeoutMs) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Bytes from the hex of docs/protocol.md's examples ("0d 00 00 00  03 ..."). */
export function hex(text: string): Uint8Array {
  const digits = text.replace(/\s+/g, "");
  const bytes = new Uint8Array(digits.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = parseInt(digits.slice(i * 2, i * 2 + 2), 16);
  }
  return bytes;
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
}

/** Rejects with `what` when `promise` has not settled within `timeoutMs`. */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = 10000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
