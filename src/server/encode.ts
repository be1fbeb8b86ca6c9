// Response bodies, both written by the native encoder in one pass (no JSON serializer in
// between): the spec's `{"random": [...], "size": N}` and the appliance's
// `{"entropy": [...], "extensions": []}`.
import { encodeApplianceResponse, encodeEntropyResponse } from '../native/codec.js';

/** `{"random": [base64 of each 1,024-byte block], "size": N}` as bytes. */
export function quantumEntropyBody(data: Buffer): Buffer {
  return encodeEntropyResponse(data);
}

/** `{"entropy": [base64 of each block_size-byte block], "extensions": []}` as bytes. */
export function applianceBody(data: Buffer, blockSize: number): Buffer {
  return encodeApplianceResponse(data, blockSize);
}
