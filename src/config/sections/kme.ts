// The `kme` section of qentropy.json: one site of a key distribution cluster (docs/kme.md).
// Validation names the key and the problem ("kme.peers.B.url: must be an https:// URL").
import path from 'node:path';

import { isValidId } from '../../pki/identity.js';
import type { PathKeys } from '../paths.js';
import type { EnvValueType, SectionContext } from '../section.js';
import { insecureHttpProblem } from '../insecure-http.js';
import { defaultGroups, groupsProblem, hybridAvailable, isHybridGroup, NODE_VERSIONS_WITH_MLKEM } from '../../pqtls/index.js';

export type KmeSeedSourceKind = 'pool' | 'entropy-api' | 'system';

export interface KmePeerConfig {
  /** Base URL of the peer site's KME, e.g. https://kme-b.example:8443 */
  url: string;
  /** Optional link pre-shared key (0600; the same bytes at both sites). */
  pskFile?: string;
  /** Key-exchange groups this site offers when it calls the peer (default: kme.tls.groups). */
  groups: string;
  /** Refuse the link (both directions) unless its TLS negotiated a hybrid group (default: kme.requirePostQuantum). */
  requirePostQuantum: boolean;
  /** The per-link ML-KEM-768 ratchet (docs/post-quantum.md); on by default. */
  ratchet: boolean;
}

export interface KmeRatchetConfig {
  /** A new epoch (one ML-KEM-768 exchange) at least this often. */
  epochSeconds: number;
  /** ... and after this many keys in the current epoch, whichever comes first. */
  epochKeys: number;
}

/**
 * Who may fetch a key whose enc_keys named a site (`/api/v1/keys/<KME ID>/...`) instead of
 * an SAE: any SAE of the receiving site (ETSI 014's own flow, the default), only the SAEs
 * an allow list names for the key's origin, or nobody (such requests are refused).
 */
export type SiteAddressedPolicy =
  | { mode: 'any-sae' }
  | { mode: 'refuse' }
  /** SAE of this site → origin SAE IDs or origin KME IDs whose site-addressed keys it may fetch. */
  | { mode: 'allow'; allow: Record<string, string[]> };

export interface KmeConfig {
  enabled: boolean;
  /** This site's KME ID (must match the URI SAN of its certificate). */
  id: string;
  listen: { host: string; port: number };
  tls: { cert: string; key: string; ca: string; groups: string };
  /** Refuse SAE connections (and, by default, peer links) that did not negotiate a hybrid group. */
  requirePostQuantum: boolean;
  ratchet: KmeRatchetConfig;
  /** Storage URL for the key store; default: the daemon's storage. */
  storage?: string;
  /** AES-256-GCM key sealing stored keys; created 0600 when absent. */
  siteKeyFile: string;
  peers: Record<string, KmePeerConfig>;
  /** SAE ID → site KME ID, for ETSI-style `{SAE_ID}` paths and for certificates without a site URI. */
  saes: Record<string, string>;
  seedSource: KmeSeedSourceKind;
  /** For seedSource 'entropy-api': the entropy service to draw seeds from. */
  /** allowInsecureHttp: accept http:// to a non-loopback host (token and seeds in clear; logged at start). */
  entropyApi?: { url: string; tokenFile: string; caFile?: string; allowInsecureHttp?: boolean };
  /** Default key size in bits. */
  keySize: number;
  minKeySize: number;
  maxKeySize: number;
  maxKeyPerRequest: number;
  /** Keys stored per link (both directions); enc_keys beyond it gets 503. */
  maxKeyCount: number;
  /** Keys one master SAE may have waiting at a peer site on one link; enc_keys beyond it gets 503. */
  maxKeyCountPerSae: number;
  /** Keys one SAE certificate may ask for per window (a token bucket of `keys` refilled over `seconds`). */
  saeRateLimit: { keys: number; seconds: number };
  siteAddressedKeys: SiteAddressedPolicy;
  /** Listener limits: open SAE connections, and the time to receive one request's headers and body. */
  maxConnections: number;
  requestTimeoutMs: number;
  maxSaeIdCount: number;
  /** Lifetime of a stored key. */
  keyTtlSeconds: number;
  /** Lifetime at the peer of keys whose enc_keys answer a crash of the origin may have lost. */
  orphanKeyTtlSeconds: number;
  /** How long enc_keys waits for the peer to store a delivery. */
  peerTimeoutMs: number;
  /** Period of the expiry sweep and of retrying notices to peers. */
  maintenanceSeconds: number;
}

export const KME_DEFAULTS = {
  enabled: false,
  listen: { host: '0.0.0.0', port: 8443 },
  /** Under the daemon's stateDir (default /var/lib/qentropy). */
  siteKeyFile: 'kme-site.key',
  seedSource: 'pool' as KmeSeedSourceKind,
  keySize: 256,
  minKeySize: 64,
  maxKeySize: 4096,
  maxKeyPerRequest: 128,
  maxKeyCount: 100_000,
  /** The default per-SAE share: this fraction of maxKeyCount, so no single SAE can fill a link. */
  saeShareOfLink: 0.25,
  saeRateLimit: { keys: 100_000, seconds: 10 },
  maxConnections: 1024,
  requestTimeoutMs: 10_000,
  maxSaeIdCount: 8,
  keyTtlSeconds: 86_400,
  orphanKeyTtlSeconds: 300,
  peerTimeoutMs: 5_000,
  maintenanceSeconds: 5,
  ratchet: { epochSeconds: 3600, epochKeys: 100_000 },
};

/** Keys holding files (relative ones in a config file are beside the file). */
export const KME_PATHS: PathKeys = {
  'tls.cert': 'file',
  'tls.key': 'file',
  'tls.ca': 'file',
  storage: 'storage-url',
  siteKeyFile: 'file',
  'peers.*.pskFile': 'file',
  'entropyApi.tokenFile': 'file',
  'entropyApi.caFile': 'file',
};

/** Keys `QENTROPY_KME_*` variables may set (e.g. QENTROPY_KME_LISTEN_PORT). */
export const KME_ENV: Readonly<Record<string, EnvValueType>> = {
  enabled: 'boolean',
  'listen.host': 'string',
  'listen.port': 'integer',
  storage: 'string',
  siteKeyFile: 'string',
};

export class KmeConfigError extends Error {
  constructor(key: string, problem: string) {
    super(`${key}: ${problem}`);
    this.name = 'KmeConfigError';
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(o: Obj, key: string, at: string, fallback?: string): string {
  const v = o[key];
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'string' || v.length === 0) throw new KmeConfigError(`${at}.${key}`, 'must be a non-empty string');
  return v;
}

function int(o: Obj, key: string, at: string, fallback: number, min: number, max: number): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new KmeConfigError(`${at}.${key}`, `must be an integer from ${min} to ${max}`);
  }
  return v;
}

function checkKnown(o: Obj, known: readonly string[], at: string): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new KmeConfigError(`${at}.${k}`, 'unknown setting');
  }
}

const KNOWN = [
  'enabled', 'id', 'listen', 'tls', 'storage', 'siteKeyFile', 'peers', 'saes', 'seedSource', 'entropyApi', 'keySize', 'minKeySize',
  'maxKeySize', 'maxKeyPerRequest', 'maxKeyCount', 'maxSaeIdCount', 'keyTtlSeconds', 'orphanKeyTtlSeconds', 'peerTimeoutMs',
  'maintenanceSeconds', 'requirePostQuantum', 'ratchet', 'maxKeyCountPerSae', 'saeRateLimit', 'siteAddressedKeys', 'maxConnections',
  'requestTimeoutMs',
] as const;

/** requirePostQuantum on a runtime without ML-KEM: refused, naming the runtimes that have it. */
function checkRuntimeFor(at: string): void {
  if (hybridAvailable()) return;
  throw new KmeConfigError(
    `${at}.requirePostQuantum`,
    `this runtime (Node ${process.version}, OpenSSL ${process.versions.openssl}) has no ML-KEM for TLS; run qentropy on ${NODE_VERSIONS_WITH_MLKEM}, or turn requirePostQuantum off`,
  );
}

function bool(o: Obj, key: string, at: string, fallback: boolean): boolean {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new KmeConfigError(`${at}.${key}`, 'must be true or false');
  return v;
}

/** A groups list: known to this runtime, and with a hybrid group when post-quantum is required. */
function groups(o: Obj, at: string, fallback: string, requirePostQuantum: boolean): string {
  const value = o.groups === undefined ? fallback : str(o, 'groups', at);
  const problem = groupsProblem(value);
  if (problem) throw new KmeConfigError(`${at}.groups`, problem);
  if (requirePostQuantum && !value.split(':').some((g) => isHybridGroup(g))) {
    throw new KmeConfigError(`${at}.groups`, 'offers no post-quantum hybrid group (e.g. X25519MLKEM768) but requirePostQuantum is on');
  }
  // requirePostQuantum means hybrid (docs/post-quantum.md): a face that requires it offers
  // only the hybrid groups of the list, so a pure ML-KEM group would silently never be used.
  const pure = value.split(':').filter((g) => /^MLKEM\d+$/i.test(g));
  if (requirePostQuantum && pure.length > 0) {
    throw new KmeConfigError(
      `${at}.groups`,
      `${pure.join(', ')} is post-quantum but not hybrid; requirePostQuantum accepts only hybrid groups (X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024), which keep a classical layer: remove it or turn requirePostQuantum off`,
    );
  }
  return value;
}

/** `siteAddressedKeys`: "any-sae", "refuse", or { "<SAE of this site>": ["<origin SAE or KME ID>", ...] }. */
function siteAddressedKeys(raw: unknown, at: string, id: string, peers: Record<string, KmePeerConfig>, saes: Record<string, string>): SiteAddressedPolicy {
  const key = `${at}.siteAddressedKeys`;
  if (raw === undefined || raw === 'any-sae') return { mode: 'any-sae' };
  if (raw === 'refuse') return { mode: 'refuse' };
  if (!isObj(raw)) throw new KmeConfigError(key, `must be "any-sae", "refuse" or an object of SAE ID of this site → origin SAE or KME IDs`);
  const allow: Record<string, string[]> = {};
  for (const [sae, origins] of Object.entries(raw)) {
    if (!isValidId(sae) || sae === id || sae in peers) throw new KmeConfigError(`${key}.${sae}`, 'must be an SAE ID of this site');
    if (saes[sae] !== undefined && saes[sae] !== id) throw new KmeConfigError(`${key}.${sae}`, `is registered in ${at}.saes to site '${saes[sae]}', not to this site`);
    if (!Array.isArray(origins) || !origins.every((o): o is string => typeof o === 'string' && isValidId(o))) {
      throw new KmeConfigError(`${key}.${sae}`, 'must be an array of origin SAE IDs or peer KME IDs');
    }
    allow[sae] = origins;
  }
  return { mode: 'allow', allow };
}

/** Validates the `kme` section (raw JSON) and fills defaults. */
export function parseKmeConfig(raw: unknown, at = 'kme', context: SectionContext = { stateDir: '/var/lib/qentropy' }): KmeConfig {
  if (!isObj(raw)) throw new KmeConfigError(at, 'must be an object');
  checkKnown(raw, KNOWN, at);
  const enabled = raw.enabled === undefined ? true : raw.enabled;
  if (typeof enabled !== 'boolean') throw new KmeConfigError(`${at}.enabled`, 'must be true or false');
  const id = str(raw, 'id', at);
  if (!isValidId(id)) throw new KmeConfigError(`${at}.id`, 'use 1-64 characters A-Z a-z 0-9 . _ -');

  const listenRaw = raw.listen ?? {};
  if (!isObj(listenRaw)) throw new KmeConfigError(`${at}.listen`, 'must be an object');
  checkKnown(listenRaw, ['host', 'port'], `${at}.listen`);
  const listen = {
    host: str(listenRaw, 'host', `${at}.listen`, KME_DEFAULTS.listen.host),
    port: int(listenRaw, 'port', `${at}.listen`, KME_DEFAULTS.listen.port, 0, 65535),
  };

  const tlsRaw = raw.tls;
  if (!isObj(tlsRaw)) throw new KmeConfigError(`${at}.tls`, 'must be an object with cert, key and ca file paths');
  checkKnown(tlsRaw, ['cert', 'key', 'ca', 'groups'], `${at}.tls`);
  const requirePostQuantum = bool(raw, 'requirePostQuantum', at, false);
  if (requirePostQuantum) checkRuntimeFor(at);
  const tls = {
    cert: str(tlsRaw, 'cert', `${at}.tls`),
    key: str(tlsRaw, 'key', `${at}.tls`),
    ca: str(tlsRaw, 'ca', `${at}.tls`),
    groups: groups(tlsRaw, `${at}.tls`, defaultGroups(), requirePostQuantum),
  };

  const ratchetRaw = raw.ratchet ?? {};
  if (!isObj(ratchetRaw)) throw new KmeConfigError(`${at}.ratchet`, 'must be an object { epochSeconds?, epochKeys? }');
  checkKnown(ratchetRaw, ['epochSeconds', 'epochKeys'], `${at}.ratchet`);
  const ratchet = {
    epochSeconds: int(ratchetRaw, 'epochSeconds', `${at}.ratchet`, KME_DEFAULTS.ratchet.epochSeconds, 1, 366 * 86_400),
    epochKeys: int(ratchetRaw, 'epochKeys', `${at}.ratchet`, KME_DEFAULTS.ratchet.epochKeys, 1, 1_000_000_000),
  };

  const peersRaw = raw.peers ?? {};
  if (!isObj(peersRaw)) throw new KmeConfigError(`${at}.peers`, 'must be an object of KME ID → { url, pskFile? }');
  const peers: Record<string, KmePeerConfig> = {};
  for (const [peerId, p] of Object.entries(peersRaw)) {
    const pAt = `${at}.peers.${peerId}`;
    if (!isValidId(peerId)) throw new KmeConfigError(pAt, 'the peer KME ID is not valid');
    if (peerId === id) throw new KmeConfigError(pAt, 'a site cannot be its own peer');
    if (!isObj(p)) throw new KmeConfigError(pAt, 'must be an object { url, pskFile? }');
    checkKnown(p, ['url', 'pskFile', 'groups', 'requirePostQuantum', 'ratchet'], pAt);
    const url = str(p, 'url', pAt);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new KmeConfigError(`${pAt}.url`, 'must be an https:// URL');
    }
    if (parsed.protocol !== 'https:') throw new KmeConfigError(`${pAt}.url`, 'must be an https:// URL');
    const linkRequires = bool(p, 'requirePostQuantum', pAt, requirePostQuantum);
    if (linkRequires) checkRuntimeFor(pAt);
    peers[peerId] = {
      url: url.replace(/\/+$/, ''),
      ...(p.pskFile !== undefined ? { pskFile: str(p, 'pskFile', pAt) } : {}),
      groups: groups(p, pAt, tls.groups, linkRequires),
      requirePostQuantum: linkRequires,
      ratchet: bool(p, 'ratchet', pAt, true),
    };
  }

  const saesRaw = raw.saes ?? {};
  if (!isObj(saesRaw)) throw new KmeConfigError(`${at}.saes`, 'must be an object of SAE ID → site KME ID');
  const saes: Record<string, string> = {};
  for (const [saeId, site] of Object.entries(saesRaw)) {
    if (!isValidId(saeId)) throw new KmeConfigError(`${at}.saes.${saeId}`, 'the SAE ID is not valid');
    if (typeof site !== 'string' || (site !== id && !(site in peers))) {
      throw new KmeConfigError(`${at}.saes.${saeId}`, 'must name this site or one of its peers');
    }
    if (saeId === id || saeId in peers) throw new KmeConfigError(`${at}.saes.${saeId}`, 'an SAE ID cannot equal a KME ID');
    saes[saeId] = site;
  }

  const seedSource = raw.seedSource ?? KME_DEFAULTS.seedSource;
  if (seedSource !== 'pool' && seedSource !== 'entropy-api' && seedSource !== 'system') {
    throw new KmeConfigError(`${at}.seedSource`, "must be 'pool', 'entropy-api' or 'system'");
  }

  let entropyApi: KmeConfig['entropyApi'];
  if (raw.entropyApi !== undefined) {
    const e = raw.entropyApi;
    if (!isObj(e)) throw new KmeConfigError(`${at}.entropyApi`, 'must be an object { url, tokenFile, caFile? }');
    checkKnown(e, ['url', 'tokenFile', 'caFile', 'allowInsecureHttp'], `${at}.entropyApi`);
    const url = str(e, 'url', `${at}.entropyApi`);
    if (e.allowInsecureHttp !== undefined && typeof e.allowInsecureHttp !== 'boolean') {
      throw new KmeConfigError(`${at}.entropyApi.allowInsecureHttp`, 'must be true or false');
    }
    const allowInsecureHttp = e.allowInsecureHttp === true;
    // The seeds of every key come over this connection: in clear, anyone on the path can compute the keys.
    const insecure = insecureHttpProblem(url, allowInsecureHttp, 'the access token and the seeds of every key');
    if (insecure) throw new KmeConfigError(`${at}.entropyApi.url`, insecure);
    entropyApi = {
      url,
      tokenFile: str(e, 'tokenFile', `${at}.entropyApi`),
      ...(e.caFile !== undefined ? { caFile: str(e, 'caFile', `${at}.entropyApi`) } : {}),
      ...(allowInsecureHttp ? { allowInsecureHttp } : {}),
    };
  }
  if (seedSource === 'entropy-api' && !entropyApi) {
    throw new KmeConfigError(`${at}.entropyApi`, "is required when seedSource is 'entropy-api'");
  }

  const minKeySize = int(raw, 'minKeySize', at, KME_DEFAULTS.minKeySize, 8, 65_280);
  const maxKeySize = int(raw, 'maxKeySize', at, KME_DEFAULTS.maxKeySize, minKeySize, 65_280);
  const keySize = int(raw, 'keySize', at, KME_DEFAULTS.keySize, minKeySize, maxKeySize);
  for (const [k, v] of [['minKeySize', minKeySize], ['maxKeySize', maxKeySize], ['keySize', keySize]] as const) {
    if (v % 8 !== 0) throw new KmeConfigError(`${at}.${k}`, 'must be a multiple of 8 bits');
  }

  const maxKeyCount = int(raw, 'maxKeyCount', at, KME_DEFAULTS.maxKeyCount, 1, 1_000_000_000);
  const rateRaw = raw.saeRateLimit ?? {};
  if (!isObj(rateRaw)) throw new KmeConfigError(`${at}.saeRateLimit`, 'must be an object { keys?, seconds? }');
  checkKnown(rateRaw, ['keys', 'seconds'], `${at}.saeRateLimit`);

  const storage = raw.storage === undefined ? undefined : str(raw, 'storage', at);
  return {
    enabled,
    id,
    listen,
    tls,
    requirePostQuantum,
    ratchet,
    ...(storage !== undefined ? { storage } : {}),
    siteKeyFile: str(raw, 'siteKeyFile', at, path.join(context.stateDir, KME_DEFAULTS.siteKeyFile)),
    peers,
    saes,
    seedSource,
    ...(entropyApi ? { entropyApi } : {}),
    keySize,
    minKeySize,
    maxKeySize,
    maxKeyPerRequest: int(raw, 'maxKeyPerRequest', at, KME_DEFAULTS.maxKeyPerRequest, 1, 10_000),
    maxKeyCount,
    maxKeyCountPerSae: int(raw, 'maxKeyCountPerSae', at, Math.ceil(maxKeyCount * KME_DEFAULTS.saeShareOfLink), 1, maxKeyCount),
    saeRateLimit: {
      keys: int(rateRaw, 'keys', `${at}.saeRateLimit`, KME_DEFAULTS.saeRateLimit.keys, 1, 1_000_000_000),
      seconds: int(rateRaw, 'seconds', `${at}.saeRateLimit`, KME_DEFAULTS.saeRateLimit.seconds, 1, 366 * 86_400),
    },
    siteAddressedKeys: siteAddressedKeys(raw.siteAddressedKeys, at, id, peers, saes),
    maxConnections: int(raw, 'maxConnections', at, KME_DEFAULTS.maxConnections, 1, 1_000_000),
    requestTimeoutMs: int(raw, 'requestTimeoutMs', at, KME_DEFAULTS.requestTimeoutMs, 100, 600_000),
    maxSaeIdCount: int(raw, 'maxSaeIdCount', at, KME_DEFAULTS.maxSaeIdCount, 0, 1000),
    keyTtlSeconds: int(raw, 'keyTtlSeconds', at, KME_DEFAULTS.keyTtlSeconds, 1, 10 * 365 * 86_400),
    orphanKeyTtlSeconds: int(raw, 'orphanKeyTtlSeconds', at, KME_DEFAULTS.orphanKeyTtlSeconds, 1, 10 * 365 * 86_400),
    peerTimeoutMs: int(raw, 'peerTimeoutMs', at, KME_DEFAULTS.peerTimeoutMs, 100, 600_000),
    maintenanceSeconds: int(raw, 'maintenanceSeconds', at, KME_DEFAULTS.maintenanceSeconds, 1, 3600),
  };
}
