// The `entropy` section: the quantum-entropy API role (docs/config.md). Its shape is what
// src/roles/entropy.ts takes (EntropyRoleConfig), minus storageUrl, which comes from
// the top-level `storage.url`.
import path from 'node:path';

import type { ConfigNode } from '../node.js';
import type { ConfigSection } from '../section.js';
import { validateGroups } from './tls-groups.js';
import { validateServerTls, type ServerTlsConfig } from './server-tls.js';
import { DEFAULT_MAX_CONNECTIONS } from '../../listener/index.js';
import { insecureHttpProblem } from '../insecure-http.js';

export const ENTROPY_SOURCES = ['hwrng', 'device:PATH', 'rdseed', 'upstream', 'getrandom'] as const;

export interface EntropyConfig {
  enabled: boolean;
  /** maxConnections: connections served at once; more get 503 with Retry-After (docs/security.md). */
  listen: { host: string; port: number; maxConnections?: number };
  /** PEM files; required when enabled unless plainHttp. */
  tls?: ServerTlsConfig;
  plainHttp: boolean;
  /** hwrng | device:PATH | rdseed | upstream | getrandom */
  source: string;
  upstream?: EntropyApiClientConfig;
  /** chunkBytes absent: the source's preferred read size (EntropySource.preferredReadBytes). */
  pool: { capacityBytes: number; lowWaterBytes: number; chunkBytes?: number };
  /** assessment: a `qentropy ea --json` file of the source's bytes; its H lowers minEntropyPerByte. */
  health: { minEntropyPerByte: number; assessment?: string; failureLimit: number };
  rateLimit: { requests: number; windowMs: number };
  logRequests: boolean;
}

const DEFAULT_CAPACITY = 16 * 1024 * 1024;

function validateSource(node: ConfigNode): string {
  const source = node.string('hwrng');
  if (['hwrng', 'rdseed', 'upstream', 'getrandom'].includes(source)) return source;
  if (source.startsWith('device:')) {
    const devicePath = source.slice('device:'.length);
    if (!path.isAbsolute(devicePath)) node.fail(`device:PATH needs an absolute path, got ${JSON.stringify(source)}`);
    return source;
  }
  if (node.present && typeof node.value === 'string') node.fail(`expected one of ${ENTROPY_SOURCES.join(', ')}, got ${JSON.stringify(source)}`);
  return source;
}

/** How to reach another entropy API of the spec's shape (entropy.upstream, quality.entropyApi). */
export interface EntropyApiClientConfig {
  url: string;
  tokenFile?: string;
  token?: string;
  caFile?: string;
  blocksPerRequest?: number;
  /** `tls.groups`: key-exchange groups offered to the API (absent: the runtime's default; docs/post-quantum.md). */
  tlsGroups?: string;
  /** Allow http:// to a non-loopback host (the token goes in clear; logged at start). */
  allowInsecureHttp?: boolean;
}

/**
 * Validates an entropy API client block. `requiredWhen` is the reason the block must be
 * present (e.g. 'entropy.source is "upstream"'), or undefined when it is optional.
 */
export function validateEntropyApiClient(node: ConfigNode, requiredWhen: string | undefined): EntropyApiClientConfig | undefined {
  if (!node.present) {
    if (requiredWhen) node.fail(`is required when ${requiredWhen}`);
    return undefined;
  }
  node.object(['url', 'tokenFile', 'token', 'caFile', 'blocksPerRequest', 'tls', 'allowInsecureHttp']);
  const groupsNode = node.child('tls').object(['groups']).child('groups');
  const tlsGroups = groupsNode.present ? validateGroups(groupsNode) : undefined;
  const url = node.child('url').requiredString();
  if (url && !/^https?:\/\/[^/]+/.test(url)) node.child('url').fail(`expected an http(s) URL, got ${JSON.stringify(url)}`);
  const allowInsecureHttp = node.child('allowInsecureHttp').boolean(false);
  const insecure = url ? insecureHttpProblem(url, allowInsecureHttp) : undefined;
  if (insecure) node.child('url').fail(insecure);
  const tokenFile = node.child('tokenFile').optionalString();
  const token = node.child('token').optionalString();
  if (!tokenFile && !token) node.fail('needs tokenFile (or token)');
  const caFile = node.child('caFile').optionalString();
  const blocks = node.child('blocksPerRequest');
  const blocksPerRequest = blocks.present ? blocks.integer(512, { min: 1, max: 512 }) : undefined;
  return {
    url,
    ...(tokenFile !== undefined ? { tokenFile } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(caFile !== undefined ? { caFile } : {}),
    ...(blocksPerRequest !== undefined ? { blocksPerRequest } : {}),
    ...(tlsGroups !== undefined ? { tlsGroups } : {}),
    ...(allowInsecureHttp ? { allowInsecureHttp } : {}),
  };
}

export const entropySection: ConfigSection<EntropyConfig> = {
  key: 'entropy',
  paths: {
    'tls.certFile': 'file',
    'tls.keyFile': 'file',
    'upstream.tokenFile': 'file',
    'upstream.caFile': 'file',
  },
  env: {
    enabled: 'boolean',
    'listen.host': 'string',
    'listen.port': 'integer',
    'tls.certFile': 'string',
    'tls.keyFile': 'string',
    plainHttp: 'boolean',
    source: 'string',
    'upstream.url': 'string',
    'upstream.tokenFile': 'string',
    'pool.capacityBytes': 'integer',
    'pool.lowWaterBytes': 'integer',
    'health.minEntropyPerByte': 'number',
    'health.assessment': 'string',
  },
  validate(node) {
    node.object(['enabled', 'listen', 'tls', 'plainHttp', 'source', 'upstream', 'pool', 'health', 'rateLimit', 'logRequests']);
    const enabled = node.child('enabled').boolean(false);

    const listenNode = node.child('listen').object(['host', 'port', 'maxConnections']);
    const listen = {
      host: listenNode.child('host').string('127.0.0.1'),
      port: listenNode.child('port').integer(8443, { min: 0, max: 65535 }),
      maxConnections: listenNode.child('maxConnections').integer(DEFAULT_MAX_CONNECTIONS, { min: 1, max: 100_000 }),
    };

    const plainHttp = node.child('plainHttp').boolean(false);
    const tls = validateServerTls(node.child('tls'), 'entropy', { enabled, plainHttp });

    const source = validateSource(node.child('source'));
    const upstream = validateEntropyApiClient(node.child('upstream'), source === 'upstream' ? 'entropy.source is "upstream"' : undefined);

    const poolNode = node.child('pool').object(['capacityBytes', 'lowWaterBytes', 'chunkBytes']);
    const capacityBytes = poolNode.child('capacityBytes').integer(DEFAULT_CAPACITY, { min: 512 * 1024, max: 2 ** 32 });
    const lowWaterBytes = poolNode.child('lowWaterBytes').integer(Math.floor(capacityBytes / 2), { min: 0 });
    if (lowWaterBytes > capacityBytes) poolNode.child('lowWaterBytes').fail(`must not exceed pool.capacityBytes (${capacityBytes})`);
    const chunkBytes = poolNode.keys().includes('chunkBytes')
      ? poolNode.child('chunkBytes').integer(64 * 1024, { min: 1024, max: capacityBytes })
      : undefined;

    const healthNode = node.child('health').object(['minEntropyPerByte', 'assessment', 'failureLimit']);
    const assessment = healthNode.child('assessment').optionalString();
    const health = {
      minEntropyPerByte: healthNode.child('minEntropyPerByte').number(7.5, { min: 0, max: 8, minExclusive: true }),
      ...(assessment !== undefined ? { assessment } : {}),
      failureLimit: healthNode.child('failureLimit').integer(64, { min: 1 }),
    };

    const rateNode = node.child('rateLimit').object(['requests', 'windowMs']);
    const rateLimit = {
      requests: rateNode.child('requests').integer(30, { min: 1 }),
      windowMs: rateNode.child('windowMs').integer(10_000, { min: 1 }),
    };

    return {
      enabled,
      listen,
      ...(tls ? { tls } : {}),
      plainHttp,
      source,
      ...(upstream ? { upstream } : {}),
      pool: { capacityBytes, lowWaterBytes, ...(chunkBytes !== undefined ? { chunkBytes } : {}) },
      health,
      rateLimit,
      logRequests: node.child('logRequests').boolean(false),
    };
  },
};
