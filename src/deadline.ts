// A signal that aborts after `ms` with a TimeoutError (as AbortSignal.timeout's does), and
// clear() for when the work finished first. AbortSignal.timeout's timer cannot be
// cancelled: at thousands of requests a second every one stayed queued for its whole
// timeout and, when it fired, built a DOMException for nobody (5 % of a KME site's CPU at
// full key rate, benchmarks/README.md issue 29 item 8).

export interface Deadline {
  readonly signal: AbortSignal;
  /** Stops the timer (the signal then never aborts on its own). */
  clear(): void;
}

/** `parent` (optional) aborts the signal too, with its own reason. */
export function deadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`The operation was aborted due to timeout (${ms} ms)`, 'TimeoutError')), ms);
  timer.unref?.();
  let onParentAbort: (() => void) | undefined;
  if (parent) {
    if (parent.aborted) controller.abort(parent.reason);
    else {
      onParentAbort = () => controller.abort(parent.reason);
      parent.addEventListener('abort', onParentAbort, { once: true });
    }
  }
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      if (onParentAbort) parent!.removeEventListener('abort', onParentAbort);
    },
  };
}
