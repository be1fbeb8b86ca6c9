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
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(errorBody(error.message, error.details));
}
