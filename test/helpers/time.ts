// Deadlines for tests that wait for an event. A test waits for the event itself (a status,
// a log line, a file), never for a fixed time; the deadline only bounds how long a broken
// build hangs. On a loaded machine everything is slower, so every deadline is multiplied
// by QENTROPY_TEST_TIME_SCALE (default 1; CI on a busy machine may raise it, e.g. to 3).
// vitest.config.ts scales the per-test timeouts the same way.

/** The factor every test deadline is multiplied by (≥ 1). */
export const timeScale = Math.max(1, Number(process.env.QENTROPY_TEST_TIME_SCALE) || 1);

/** `ms` scaled by QENTROPY_TEST_TIME_SCALE. */
export function scaled(ms: number): number {
  return Math.round(ms * timeScale);
}

/**
 * Resolves once `check` returns true; polls every `everyMs`. Throws "timed out waiting for
 * WHAT" after the (scaled) deadline, so a failure names what never happened; `what` may be
 * a function, called then, to say what was seen instead.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  what: string | (() => string) = 'condition',
  everyMs = 20,
): Promise<void> {
  const end = Date.now() + scaled(timeoutMs);
  while (!(await check())) {
    if (Date.now() > end) {
      throw new Error(`timed out after ${scaled(timeoutMs)} ms waiting for ${typeof what === 'function' ? what() : what}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
