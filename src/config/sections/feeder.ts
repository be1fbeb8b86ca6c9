// The `feeder` section: seed the kernel pool and HSMs from entropy APIs (docs/feeder.md).
// Validated in full at start (and on every SIGHUP reload), naming the key of each problem.
import path from 'node:path';

import { validateGroups } from './tls-groups.js';
import type { ConfigNode } from '../node.js';
import type { ConfigSection } from '../section.js';
import { insecureHttpProblem } from '../insecure-http.js';

export interface FeederSourceConfig {
  url: string;
  tokenFile?: string;
  /** Inline token (tests, development); prefer tokenFile. */
  token?: string;
  caFile?: string;
  blocksPerRequest: number;
  /** `tls.groups`: key-exchange groups offered to the API (absent: the runtime's default; docs/post-quantum.md). */
  tlsGroups?: string;
  /** Allow http:// to a non-loopback host (the token goes in clear; logged at start). */
  allowInsecureHttp?: boolean;
  /** This source's `qentropy ea --json` assessment (absent: `health.assessment`). */
  assessment?: string;
}

export interface FeederPkcs11Config {
  module: string;
  tokenLabel: string;
  pinFile?: string;
  bytes: number;
  intervalMs: number;
  mixOsRandom: boolean;
}

export interface FeederFileConfig {
  path: string;
  bytes: number;
  /** 0: write whenever the buffer has bytes. */
  intervalMs: number;
}

export interface FeederConfig {
  enabled: boolean;
  sources: FeederSourceConfig[];
  /** failover: the first usable source; all: every source in each output (docs/feeder.md, "Combining"). */
  combine: 'failover' | 'all';
  /** Combining mode, a source out: go on from the rest (credit recomputed) or stop. */
  onDropOut: 'continue' | 'stop';
  health: { minEntropyPerByte: number; assessment?: string; fips140: boolean; failureLimit: number; retryAfterMs: number };
  buffer: { capacityBytes: number; lowWaterBytes: number; lockMemory: boolean };
  kernel: { enabled: boolean; device: string; creditBitsPerByte: number; bytes: number; intervalMs: number };
  pkcs11: FeederPkcs11Config[];
  files: FeederFileConfig[];
  status: { file: string; intervalMs: number; listen: { host: string; port: number } | undefined };
}

function list(node: ConfigNode): ConfigNode[] {
  if (!node.present) return [];
  if (!Array.isArray(node.value)) {
    node.fail('expected an array');
    return [];
  }
  // ConfigNode walks objects only; view the array as an object keyed by index so each item
  // reports problems as `feeder.sources.0.url` into the same problem list.
  const asObject: ConfigNode = Object.assign(Object.create(Object.getPrototypeOf(node) as object) as ConfigNode, node, {
    value: Object.fromEntries(node.value.map((v, i) => [String(i), v])),
  });
  return node.value.map((_, i) => asObject.child(String(i)));
}

function oneOf<T extends string>(node: ConfigNode, values: readonly T[], fallback: T): T {
  const value = node.string(fallback);
  if ((values as readonly string[]).includes(value)) return value as T;
  node.fail(`must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}`);
  return fallback;
}

function absolutePath(node: ConfigNode, required: boolean): string | undefined {
  const value = required ? node.requiredString() : node.optionalString();
  if (value && !path.isAbsolute(value)) node.fail(`must be an absolute path, got ${JSON.stringify(value)}`);
  return value || undefined;
}

function validateSource(node: ConfigNode): FeederSourceConfig {
  node.object(['url', 'tokenFile', 'token', 'caFile', 'blocksPerRequest', 'tls', 'allowInsecureHttp', 'assessment']);
  const groupsNode = node.child('tls').object(['groups']).child('groups');
  const tlsGroups = groupsNode.present ? validateGroups(groupsNode) : undefined;
  const url = node.child('url').requiredString();
  if (url && !/^https?:\/\/[^/]+/.test(url)) node.child('url').fail(`expected an https:// URL, got ${JSON.stringify(url)}`);
  const allowInsecureHttp = node.child('allowInsecureHttp').boolean(false);
  const insecure = url ? insecureHttpProblem(url, allowInsecureHttp) : undefined;
  if (insecure) node.child('url').fail(insecure);
  const tokenFile = absolutePath(node.child('tokenFile'), false);
  const token = node.child('token').optionalString();
  if (!tokenFile && !token) node.fail('needs tokenFile (a file holding the access token)');
  const caFile = absolutePath(node.child('caFile'), false);
  const assessment = absolutePath(node.child('assessment'), false);
  return {
    ...(assessment ? { assessment } : {}),
    url,
    ...(tokenFile ? { tokenFile } : {}),
    ...(token ? { token } : {}),
    ...(caFile ? { caFile } : {}),
    blocksPerRequest: node.child('blocksPerRequest').integer(64, { min: 1, max: 512 }),
    ...(tlsGroups !== undefined ? { tlsGroups } : {}),
    ...(allowInsecureHttp ? { allowInsecureHttp } : {}),
  };
}

function validatePkcs11(node: ConfigNode): FeederPkcs11Config {
  node.object(['module', 'tokenLabel', 'pinFile', 'bytes', 'intervalMs', 'mixOsRandom']);
  const module = absolutePath(node.child('module'), true) ?? '';
  const tokenLabel = node.child('tokenLabel').requiredString();
  if (Buffer.byteLength(tokenLabel) > 32) node.child('tokenLabel').fail('is longer than the 32 bytes a PKCS#11 label holds');
  if (node.child('pin').present) node.child('pin').fail('put the PIN in a file and name it in pinFile');
  const pinFile = absolutePath(node.child('pinFile'), false);
  return {
    module,
    tokenLabel,
    ...(pinFile ? { pinFile } : {}),
    bytes: node.child('bytes').integer(48, { min: 1, max: 4096 }),
    intervalMs: node.child('intervalMs').integer(10_000, { min: 100 }),
    mixOsRandom: node.child('mixOsRandom').boolean(false),
  };
}

function validateFile(node: ConfigNode): FeederFileConfig {
  node.object(['path', 'bytes', 'intervalMs']);
  return {
    path: absolutePath(node.child('path'), true) ?? '',
    bytes: node.child('bytes').integer(4096, { min: 1, max: 16 * 1024 * 1024 }),
    intervalMs: node.child('intervalMs').integer(1_000, { min: 0 }),
  };
}

export const feederSection: ConfigSection<FeederConfig> = {
  key: 'feeder',
  paths: {
    'sources.*.tokenFile': 'file',
    'sources.*.caFile': 'file',
    'sources.*.assessment': 'file',
    'pkcs11.*.module': 'file',
    'pkcs11.*.pinFile': 'file',
    'files.*.path': 'file',
    'status.file': 'file',
  },
  env: {
    enabled: 'boolean',
    'kernel.enabled': 'boolean',
    'kernel.creditBitsPerByte': 'integer',
    'kernel.intervalMs': 'integer',
    'buffer.capacityBytes': 'integer',
    'health.minEntropyPerByte': 'number',
    'health.assessment': 'string',
    'health.fips140': 'boolean',
    combine: 'string',
    onDropOut: 'string',
    'status.file': 'string',
  },
  validate(node, context) {
    node.object(['enabled', 'sources', 'combine', 'onDropOut', 'health', 'buffer', 'kernel', 'pkcs11', 'files', 'status']);
    const enabled = node.child('enabled').boolean(false);
    const sources = list(node.child('sources')).map(validateSource);
    if (enabled && sources.length === 0) node.child('sources').fail('needs at least one entropy API ({"url": ..., "tokenFile": ...})');
    const combine = oneOf(node.child('combine'), ['failover', 'all'] as const, 'failover');
    if (combine === 'all' && sources.length < 2) node.child('combine').fail(`"all" combines two or more sources; feeder.sources has ${sources.length}`);
    const onDropOut = oneOf(node.child('onDropOut'), ['continue', 'stop'] as const, 'continue');

    const h = node.child('health').object(['minEntropyPerByte', 'assessment', 'fips140', 'failureLimit', 'retryAfterMs']);
    // A `qentropy ea --json` file: its assessed H lowers minEntropyPerByte and caps the kernel credit.
    const assessment = absolutePath(h.child('assessment'), false);
    const health = {
      minEntropyPerByte: h.child('minEntropyPerByte').number(7.5, { min: 0, max: 8, minExclusive: true }),
      ...(assessment ? { assessment } : {}),
      fips140: h.child('fips140').boolean(false),
      failureLimit: h.child('failureLimit').integer(16, { min: 1 }),
      retryAfterMs: h.child('retryAfterMs').integer(600_000, { min: 1_000 }),
    };

    const b = node.child('buffer').object(['capacityBytes', 'lowWaterBytes', 'lockMemory']);
    const capacityBytes = b.child('capacityBytes').integer(64 * 1024, { min: 4096, max: 64 * 1024 * 1024 });
    const lowWaterBytes = b.child('lowWaterBytes').integer(Math.floor(capacityBytes / 2), { min: 0 });
    if (lowWaterBytes > capacityBytes) b.child('lowWaterBytes').fail(`must not exceed buffer.capacityBytes (${capacityBytes})`);
    const buffer = { capacityBytes, lowWaterBytes, lockMemory: b.child('lockMemory').boolean(true) };

    const k = node.child('kernel').object(['enabled', 'device', 'creditBitsPerByte', 'bytes', 'intervalMs']);
    const kernel = {
      enabled: k.child('enabled').boolean(true),
      device: absolutePath(k.child('device'), false) ?? '/dev/random',
      creditBitsPerByte: k.child('creditBitsPerByte').integer(0, { min: 0, max: 8 }),
      bytes: k.child('bytes').integer(512, { min: 1, max: 64 * 1024 }),
      intervalMs: k.child('intervalMs').integer(60_000, { min: 100 }),
    };

    const pkcs11 = list(node.child('pkcs11')).map(validatePkcs11);
    const files = list(node.child('files')).map(validateFile);
    if (enabled && !kernel.enabled && pkcs11.length === 0 && files.length === 0) {
      node.fail('no sink: enable feeder.kernel, or add feeder.pkcs11 or feeder.files entries');
    }
    const s = node.child('status').object(['file', 'intervalMs', 'listen']);
    const listenNode = s.child('listen');
    let listen: FeederConfig['status']['listen'] = { host: '127.0.0.1', port: 9478 };
    if (listenNode.present && listenNode.value === false) listen = undefined;
    else if (listenNode.present) {
      listenNode.object(['host', 'port']);
      listen = { host: listenNode.child('host').string('127.0.0.1'), port: listenNode.child('port').integer(9478, { min: 0, max: 65535 }) };
    }
    const status = {
      file: absolutePath(s.child('file'), false) ?? path.join(context.stateDir, 'feeder-status.json'),
      intervalMs: s.child('intervalMs').integer(5_000, { min: 100 }),
      listen,
    };
    return { enabled, sources, combine, onDropOut, health, buffer, kernel, pkcs11, files, status };
  },
};
