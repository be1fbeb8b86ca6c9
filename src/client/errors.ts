// Errors of the entropy client, each carrying what the retry policy needs to decide.

/** How the retry policy treats an error (product.md §4). */
export type ErrorClass =
  /** 400, 401: retrying cannot help; stop until the configuration changes. */
  | 'fatal'
  /** 403: the account's allotment is used up; wait at least a minute or until the period resets. */
  | 'allotment'
  /** 429, 5xx, network errors, timeouts, invalid bodies: back off and try again. */
  | 'transient';

export class EntropyClientError extends Error {
  constructor(
    message: string,
    readonly errorClass: ErrorClass,
    /** HTTP status, when the server answered. */
    readonly status?: number,
    /** The server's Retry-After, in milliseconds, when it sent one. */
    readonly retryAfterMs?: number,
    /** The server's error `details`, when it sent the JSON error body. */
    readonly details?: unknown[],
  ) {
    super(message);
    this.name = 'EntropyClientError';
  }
}

/**
 * One line per status, for people at a terminal and for logs: what the status means and
 * what the server said (its message, and its Retry-After when it sent one). Nothing in it
 * is our own guess at the server's policy: another server's rate limit is not ours.
 */
export function describeStatus(status: number, serverMessage: string | undefined, retryAfterMs?: number): string {
  const wait = retryAfterMs !== undefined ? ` (Retry-After: ${Math.ceil(retryAfterMs / 1000)} s)` : '';
  const said = (serverMessage ? `: ${serverMessage}` : '') + (status === 429 || status === 503 || status === 403 ? wait : '');
  switch (status) {
    case 400:
      return `bad request (400)${said}`;
    case 401:
      return `access token rejected (401): missing, unknown, expired or revoked${said}`;
    case 403:
      return `allotment for this period used up (403)${said}`;
    case 429:
      return `rate limited by the server (429)${said}`;
    case 500:
      return `server error (500)${said}`;
    case 503:
      return `not enough entropy supply right now (503)${said}`;
    default:
      return `unexpected HTTP status ${status}${said}`;
  }
}

export function classifyStatus(status: number): ErrorClass {
  if (status === 403) return 'allotment';
  if (status === 429 || status >= 500) return 'transient';
  return 'fatal';
}

/**
 * Retry-After in milliseconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * Undefined when absent or unparsable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
