// The `quality` section: the NIST STS quality role (docs/quality.md). Its shape is what
// src/roles/quality.ts takes, plus the top-level `storage.url`.
import type { ConfigNode } from '../node.js';
import type { ConfigSection } from '../section.js';
import { validateServerTls, type ServerTlsConfig } from './server-tls.js';
import { validateEntropyApiClient, type EntropyApiClientConfig } from './entropy.js';
import { DEFAULT_MAX_CONNECTIONS } from '../../listener/index.js';

/** Where a run's bits come from. */
export type QualitySourceKind = 'pool' | 'entropy-api';

export interface QualityConfig {
  enabled: boolean;
  /** The quality APIs' own listener (the provider serves them from a separate host). */
  /** maxConnections: connections served at once; more get 503 with Retry-After (docs/security.md). */
  listen: { host: string; port: number; maxConnections?: number };
  /** PEM files; required when enabled unless plainHttp. */
  tls?: ServerTlsConfig;
  plainHttp: boolean;
  /** Seconds between runs (default 600). */
  intervalSeconds: number;
  /** Seconds from start to the first run (default 0: at once). */
  firstRunDelaySeconds: number;
  /** Sequences per run, M (default 100; uniformity needs at least 55). */
  streams: number;
  /** Bits per sequence, N (default 1,000,000). */
  bitsPerStream: number;
  /** Battery worker threads (default 1; 0 = every core). */
  threads: number;
  /**
   * `pool`: the local entropy pool's quality tap (the entropy role's pool in the same
   * daemon, else a pool of our own filled from `localSource`). `entropy-api`: a remote
   * entropy API through the client, to audit a provider from outside.
   */
  source: QualitySourceKind;
  /** For `pool` without an entropy role in this daemon: hwrng | device:PATH | rdseed | getrandom (default: entropy.source). */
  localSource?: string;
  entropyApi?: EntropyApiClientConfig & { blocksPerRequest: number };
  /** A draw that takes longer than this is recorded as an error run (default 300 s). */
  drawTimeoutSeconds: number;
  /** Records older than this are pruned (default 90 days). */
  retentionDays: number;
  /** How long a passing run's tested bits are kept (default 0: not at all). */
  passingDataRetentionDays: number;
  /** How often the pruning runs in the background (default 3600 s). */
  pruneIntervalSeconds: number;
  logRequests: boolean;
}

export const QUALITY_DEFAULTS = {
  listen: { host: '127.0.0.1', port: 8444 },
  intervalSeconds: 600,
  firstRunDelaySeconds: 0,
  streams: 100,
  bitsPerStream: 1_000_000,
  threads: 1,
  drawTimeoutSeconds: 300,
  retentionDays: 90,
  passingDataRetentionDays: 0,
  pruneIntervalSeconds: 3600,
} as const;

/** Most bits one run may draw (M x N): 2^33 bits = 1 GiB of memory for the battery. */
export const MAX_RUN_BITS = 2 ** 33;

const KEYS = [
  'enabled', 'listen', 'tls', 'plainHttp', 'intervalSeconds', 'firstRunDelaySeconds', 'streams', 'bitsPerStream', 'threads',
  'source', 'localSource', 'entropyApi', 'drawTimeoutSeconds', 'retentionDays', 'passingDataRetentionDays',
  'pruneIntervalSeconds', 'logRequests',
];

function validateEntropyApi(node: ConfigNode, required: boolean): QualityConfig['entropyApi'] {
  const api = validateEntropyApiClient(node, required ? 'quality.source is "entropy-api"' : undefined);
  return api && { ...api, blocksPerRequest: api.blocksPerRequest ?? 512 };
}

function validateLocalSource(node: ConfigNode): string | undefined {
  if (!node.present) return undefined;
  const text = node.string('');
  if (['hwrng', 'rdseed', 'getrandom'].includes(text)) return text;
  if (text.startsWith('device:/')) return text;
  node.fail(`expected hwrng, device:PATH (absolute), rdseed or getrandom, got ${JSON.stringify(text)}`);
  return undefined;
}

export const qualitySection: ConfigSection<QualityConfig> = {
  key: 'quality',
  paths: {
    'tls.certFile': 'file',
    'tls.keyFile': 'file',
    'entropyApi.tokenFile': 'file',
    'entropyApi.caFile': 'file',
  },
  env: {
    enabled: 'boolean',
    'listen.host': 'string',
    'listen.port': 'integer',
    'tls.certFile': 'string',
    'tls.keyFile': 'string',
    plainHttp: 'boolean',
    intervalSeconds: 'integer',
    firstRunDelaySeconds: 'integer',
    streams: 'integer',
    bitsPerStream: 'integer',
    threads: 'integer',
    source: 'string',
    localSource: 'string',
    'entropyApi.url': 'string',
    'entropyApi.tokenFile': 'string',
    retentionDays: 'integer',
    passingDataRetentionDays: 'integer',
  },
  validate(node) {
    node.object(KEYS);
    const enabled = node.child('enabled').boolean(false);
    const listenNode = node.child('listen').object(['host', 'port', 'maxConnections']);
    const listen = {
      host: listenNode.child('host').string(QUALITY_DEFAULTS.listen.host),
      port: listenNode.child('port').integer(QUALITY_DEFAULTS.listen.port, { min: 0, max: 65535 }),
      maxConnections: listenNode.child('maxConnections').integer(DEFAULT_MAX_CONNECTIONS, { min: 1, max: 100_000 }),
    };
    const plainHttp = node.child('plainHttp').boolean(false);
    const tls = validateServerTls(node.child('tls'), 'quality', { enabled, plainHttp });

    const streamsNode = node.child('streams');
    const streams = streamsNode.integer(QUALITY_DEFAULTS.streams, { min: 1, max: 100_000 });
    const bitsNode = node.child('bitsPerStream');
    const bitsPerStream = bitsNode.integer(QUALITY_DEFAULTS.bitsPerStream, { min: 1000, max: 2 ** 32 });
    if (bitsPerStream % 8 !== 0) bitsNode.fail(`must be a multiple of 8 (whole bytes per sequence), got ${bitsPerStream}`);
    if (streams * bitsPerStream > MAX_RUN_BITS) node.fail(`streams x bitsPerStream must not exceed ${MAX_RUN_BITS} bits`);

    const source = node.child('source').oneOf(['pool', 'entropy-api'] as const, 'pool');
    const entropyApi = validateEntropyApi(node.child('entropyApi'), source === 'entropy-api');
    const localSource = validateLocalSource(node.child('localSource'));

    return {
      enabled,
      listen,
      ...(tls ? { tls } : {}),
      plainHttp,
      intervalSeconds: node.child('intervalSeconds').integer(QUALITY_DEFAULTS.intervalSeconds, { min: 1, max: 7 * 86_400 }),
      firstRunDelaySeconds: node.child('firstRunDelaySeconds').integer(QUALITY_DEFAULTS.firstRunDelaySeconds, { min: 0, max: 7 * 86_400 }),
      streams,
      bitsPerStream,
      threads: node.child('threads').integer(QUALITY_DEFAULTS.threads, { min: 0, max: 1024 }),
      source,
      ...(localSource !== undefined ? { localSource } : {}),
      ...(entropyApi ? { entropyApi } : {}),
      drawTimeoutSeconds: node.child('drawTimeoutSeconds').integer(QUALITY_DEFAULTS.drawTimeoutSeconds, { min: 1, max: 86_400 }),
      retentionDays: node.child('retentionDays').integer(QUALITY_DEFAULTS.retentionDays, { min: 1, max: 36_500 }),
      passingDataRetentionDays: node
        .child('passingDataRetentionDays')
        .integer(QUALITY_DEFAULTS.passingDataRetentionDays, { min: 0, max: 36_500 }),
      pruneIntervalSeconds: node.child('pruneIntervalSeconds').integer(QUALITY_DEFAULTS.pruneIntervalSeconds, { min: 1, max: 86_400 }),
      logRequests: node.child('logRequests').boolean(false),
    };
  },
};
