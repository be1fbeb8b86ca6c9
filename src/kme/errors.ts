// ETSI GS QKD 014 error semantics: 400 (bad request), 401 (unauthorised), 503 (server side,
// here: peer unreachable, store full, no entropy), with the body {"message", "details"}.

/** The error messages §6 of ETSI GS QKD 014 fixes, sent word for word. */
export const ETSI_MESSAGES = {
  sizeNotMultipleOf8: 'size shall be a multiple of 8',
  keysNotFound: 'one or more keys specified are not found on KME',
  mandatoryExtensionUnsupported: 'not all extension_mandatory parameters are supported',
} as const;

export type EtsiStatus = 400 | 401 | 404 | 405 | 408 | 409 | 413 | 431 | 503;

export class EtsiError extends Error {
  constructor(
    readonly status: EtsiStatus,
    message: string,
    readonly details: Array<Record<string, unknown>> = [],
    /** Sent as `Retry-After` (a rate limit, a connection cap). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'EtsiError';
  }

  body(): { message: string; details: Array<Record<string, unknown>> } {
    return { message: this.message, details: this.details };
  }
}

export const badRequest = (message: string, details: Array<Record<string, unknown>> = []): EtsiError =>
  new EtsiError(400, message, details);
export const unauthorized = (message: string, details: Array<Record<string, unknown>> = []): EtsiError =>
  new EtsiError(401, message, details);
export const unavailable = (message: string, details: Array<Record<string, unknown>> = [], retryAfterSeconds?: number): EtsiError =>
  new EtsiError(503, message, details, retryAfterSeconds);
