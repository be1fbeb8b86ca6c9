// Parsing and validating ETSI GS QKD 014 requests. Anything not understood is a 400 with
// the reason in `details`, and nothing is stored: unknown fields, sizes that are not whole
// bytes, counts above the limits, duplicate key IDs, mandatory extensions we do not support.
// Where §6 of the spec fixes an error message, that message is used (ETSI_MESSAGES).
import { isValidId } from '../pki/identity.js';
import { badRequest, ETSI_MESSAGES } from './errors.js';

export interface Limits {
  keySize: number;
  minKeySize: number;
  maxKeySize: number;
  maxKeyPerRequest: number;
  maxSaeIdCount: number;
}

export interface EncKeysRequest {
  number: number;
  size: number;
  additionalSlaveSaeIds: string[];
}

/** One key a dec_keys request asks for; `master` when the item names its master SAE. */
export interface KeyIdItem {
  keyId: string;
  master?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isKeyId(v: unknown): v is string {
  return typeof v === 'string' && UUID.test(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function unknownFields(obj: Record<string, unknown>, known: readonly string[], where: string): void {
  const extra = Object.keys(obj).filter((k) => !known.includes(k));
  if (extra.length > 0) {
    throw badRequest(`unknown field${extra.length > 1 ? 's' : ''} in ${where}: ${extra.join(', ')}`, extra.map((field) => ({ field, problem: 'unknown field' })));
  }
}

function checkNumber(n: unknown, limits: Limits): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > limits.maxKeyPerRequest) {
    throw badRequest(`number must be an integer from 1 to ${limits.maxKeyPerRequest}`, [{ field: 'number', max_key_per_request: limits.maxKeyPerRequest }]);
  }
  return n;
}

function checkSize(s: unknown, limits: Limits): number {
  if (typeof s !== 'number' || !Number.isInteger(s)) throw badRequest('size must be an integer number of bits', [{ field: 'size' }]);
  if (s % 8 !== 0) throw badRequest(ETSI_MESSAGES.sizeNotMultipleOf8, [{ field: 'size', size: s }]);
  if (s < limits.minKeySize || s > limits.maxKeySize) {
    throw badRequest(`size must be from ${limits.minKeySize} to ${limits.maxKeySize} bits`, [
      { field: 'size', min_key_size: limits.minKeySize, max_key_size: limits.maxKeySize },
    ]);
  }
  return s;
}

/** A query-string integer: plain decimal digits only ("1e3", "0x10", " 5" are refused). */
function queryInt(value: unknown, field: string): number {
  if (Array.isArray(value)) throw badRequest(`${field} is given more than once`, [{ field }]);
  if (typeof value !== 'string' || !/^[0-9]{1,9}$/.test(value)) throw badRequest(`${field} must be a decimal integer`, [{ field }]);
  return Number(value);
}

export function parseEncKeysQuery(query: Record<string, unknown>, limits: Limits): EncKeysRequest {
  unknownFields(query, ['number', 'size'], 'the query');
  return {
    number: query.number === undefined ? 1 : checkNumber(queryInt(query.number, 'number'), limits),
    size: query.size === undefined ? limits.keySize : checkSize(queryInt(query.size, 'size'), limits),
    additionalSlaveSaeIds: [],
  };
}

export function parseEncKeysBody(body: unknown, limits: Limits): EncKeysRequest {
  if (body === undefined || body === null) return { number: 1, size: limits.keySize, additionalSlaveSaeIds: [] };
  if (!isPlainObject(body)) throw badRequest('the request body must be a JSON object');
  unknownFields(body, ['number', 'size', 'additional_slave_SAE_IDs', 'extension_mandatory', 'extension_optional'], 'the request');
  const number = body.number === undefined ? 1 : checkNumber(body.number, limits);
  const size = body.size === undefined ? limits.keySize : checkSize(body.size, limits);

  const extra = body.additional_slave_SAE_IDs ?? [];
  if (!Array.isArray(extra) || !extra.every((s): s is string => typeof s === 'string' && isValidId(s))) {
    throw badRequest('additional_slave_SAE_IDs must be an array of SAE IDs', [{ field: 'additional_slave_SAE_IDs' }]);
  }
  if (new Set(extra).size !== extra.length) throw badRequest('additional_slave_SAE_IDs lists an SAE twice', [{ field: 'additional_slave_SAE_IDs' }]);
  if (extra.length > limits.maxSaeIdCount) {
    throw badRequest(`at most ${limits.maxSaeIdCount} additional slave SAEs`, [{ field: 'additional_slave_SAE_IDs', max_SAE_ID_count: limits.maxSaeIdCount }]);
  }

  for (const field of ['extension_mandatory', 'extension_optional'] as const) {
    const v = body[field];
    if (v !== undefined && (!Array.isArray(v) || !v.every(isPlainObject))) throw badRequest(`${field} must be an array of objects`, [{ field }]);
  }
  const mandatory = (body.extension_mandatory as Array<Record<string, unknown>> | undefined) ?? [];
  const names = mandatory.flatMap((ext) => Object.keys(ext));
  if (names.length > 0) {
    // ETSI 014: a KME that does not support a mandatory extension refuses the request.
    throw badRequest(ETSI_MESSAGES.mandatoryExtensionUnsupported, names.map((name) => ({ extension_mandatory_unsupported: `${name} is not supported` })));
  }
  return { number, size, additionalSlaveSaeIds: extra };
}

function checkKeyIds(items: KeyIdItem[], limits: Limits): KeyIdItem[] {
  if (items.length === 0) throw badRequest('no key_ID given', [{ field: 'key_IDs' }]);
  if (items.length > limits.maxKeyPerRequest) {
    throw badRequest(`at most ${limits.maxKeyPerRequest} key_IDs per request`, [{ field: 'key_IDs', max_key_per_request: limits.maxKeyPerRequest }]);
  }
  const seen = new Set<string>();
  const dups = new Set<string>();
  for (const { keyId } of items) {
    const norm = keyId.toLowerCase();
    if (seen.has(norm)) dups.add(keyId);
    seen.add(norm);
  }
  if (dups.size > 0) throw badRequest('duplicate key_ID in the request', [...dups].map((key_ID) => ({ key_ID, problem: 'duplicate' })));
  return items.map((item) => ({ ...item, keyId: item.keyId.toLowerCase() }));
}

export function parseDecKeysQuery(query: Record<string, unknown>, limits: Limits): KeyIdItem[] {
  unknownFields(query, ['key_ID'], 'the query');
  const v = query.key_ID;
  if (Array.isArray(v)) throw badRequest('key_ID is given more than once (use POST for several keys)', [{ field: 'key_ID' }]);
  if (v === undefined) throw badRequest('key_ID is required', [{ field: 'key_ID' }]);
  if (!isKeyId(v)) throw badRequest('key_ID is not a key ID', [{ key_ID: String(v), problem: 'not a UUID' }]);
  return checkKeyIds([{ keyId: v }], limits);
}

function checkExtension(value: unknown, field: string): void {
  if (value !== undefined && !isPlainObject(value)) throw badRequest(`${field} must be a JSON object`, [{ field }]);
}

/**
 * `{"key_IDs": [{"key_ID": ..., "key_ID_extension"?: {...}}], "key_IDs_extension"?: {...}}`
 * (§6.4 Table 12). The extensions are "for future use": accepted and ignored. An item may
 * carry other members (the OpenAPI description allows them; the QURSA C wrapper's QuKayDee
 * mode sends `master_SAE_ID` in every item): they are ignored too, except `master_SAE_ID`,
 * which must then name the key's master SAE (checked by the service).
 */
export function parseDecKeysBody(body: unknown, limits: Limits): KeyIdItem[] {
  if (!isPlainObject(body)) throw badRequest('the request body must be a JSON object {"key_IDs": [{"key_ID": ...}]}');
  unknownFields(body, ['key_IDs', 'key_IDs_extension'], 'the request');
  checkExtension(body.key_IDs_extension, 'key_IDs_extension');
  const list = body.key_IDs;
  if (!Array.isArray(list)) throw badRequest('key_IDs must be an array of {"key_ID": ...}', [{ field: 'key_IDs' }]);
  const items: KeyIdItem[] = [];
  for (const item of list) {
    if (!isPlainObject(item)) throw badRequest('each key_IDs entry must be an object {"key_ID": ...}', [{ field: 'key_IDs' }]);
    if (!isKeyId(item.key_ID)) throw badRequest('key_ID is not a key ID', [{ key_ID: String(item.key_ID), problem: 'not a UUID' }]);
    checkExtension(item.key_ID_extension, 'key_ID_extension');
    const master = item.master_SAE_ID;
    if (master !== undefined && (typeof master !== 'string' || !isValidId(master))) {
      throw badRequest('master_SAE_ID in a key_IDs entry must be an SAE ID', [{ key_ID: item.key_ID, field: 'master_SAE_ID' }]);
    }
    items.push({ keyId: item.key_ID, ...(master !== undefined ? { master } : {}) });
  }
  return checkKeyIds(items, limits);
}
