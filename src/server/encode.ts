// Response bodies, both written by the native encoder in one pass (no JSON serializer in
// between): the spec's `{"random": [...], "size": N}` and the appliance's
// `{"entropy": [...], "extensions": []}`.
import type { ServerResponse } from 'node:http';

import { encodeApplianceResponse, encodeEntropyResponseInto, entropyResponseLength } from '../native/codec.js';
import type { BodyBuffers } from './body-buffers.js';

/**
 * `{"random": [base64 of each 1,024-byte block], "size": N}` as bytes, written into a
 * recycled buffer that returns to `bodies` once `response` has been sent.
 */
export function quantumEntropyBody(data: Buffer, bodies: BodyBuffers, response: ServerResponse): Buffer {
  const body = bodies.acquireFor(response, entropyResponseLength(data.length / 1024));
  encodeEntropyResponseInto(data, body);
  return body;
}

/** `{"entropy": [base64 of each block_size-byte block], "extensions": []}` as bytes. */
export function applianceBody(data: Buffer, blockSize: number): Buffer {
  return encodeApplianceResponse(data, blockSize);
}
