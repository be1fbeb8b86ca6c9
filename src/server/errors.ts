// One error shape for everything this server answers (product.md §3):
// {"message": "...", "details": [...]}, with the status that fits the client's mistake.
import type { FastifyReply } from 'fastify';

export interface ErrorBody {
  message: string;
  details: unknown[];
}

/** An error a handler throws (or sends) to give the client a specific status. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly details: unknown[] = [],
    /** Seconds for Retry-After (429, 503). */
    readonly retryAfterSeconds?: number,
    /** The WWW-Authenticate challenge a 401 must carry (RFC 9110 §11.6.1). */
    readonly wwwAuthenticate?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function errorBody(message: string, details: unknown[] = []): ErrorBody {
  return { message, details };
}

export function sendApiError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.wwwAuthenticate !== undefined) reply.header('www-authenticate', error.wwwAuthenticate);
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(errorBody(error.message, error.details));
}

/**
 * A 401 with its Bearer challenge (RFC 6750 §3). A request that gave no bearer token (no
 * Authorization header, or another scheme) gets the bare challenge; one that gave a token
 * that is malformed, unknown, expired or revoked gets error="invalid_token" as well.
 */
export function unauthorized(message: string, details: unknown[], tokenGiven: boolean): ApiError {
  const challenge = tokenGiven
    ? `Bearer realm="qentropy", error="invalid_token", error_description="${message}"`
    : 'Bearer realm="qentropy"';
  return new ApiError(401, message, details, undefined, challenge);
}
