import { addonInfo, packageRoot } from './native/addon.js';
import { packageVersion } from './package-version.js';
import { mlKem768 } from './pqlink/index.js';
import { pqRuntime } from './pqtls/index.js';

/** The Node.js lines qentropy supports, as package.json's `engines` says (test/version.test.ts keeps them equal). */
export const SUPPORTED_NODE_ENGINES = '^22.20.0 || ^24.0.0 || ^26.0.0';
export const SUPPORTED_NODE = 'Node.js 22.20+, 24 or 26';

/** True when `version` (e.g. "24.9.0") is on a supported line: 22 from 22.20, 24, 26. */
export function nodeSupported(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major === 24 || major === 26 || (major === 22 && minor >= 20);
}

export interface VersionInfo {
  package: string;
  /** Where the package is installed (the directory with its package.json). */
  packageRoot: string;
  /** The addon binary in use: its version stamp, the file, and prebuild/source/env. */
  addon: { version: string; file: string; kind: 'env' | 'prebuild' | 'source' };
  node: string;
  napi: string;
  platform: string;
  cpuFeatures: string[];
  openssl: string;
  /** The runtime's OpenSSL can negotiate hybrid post-quantum TLS groups (X25519MLKEM768). */
  hybridGroups: boolean;
  /** The default tls.groups of every face on this runtime. */
  defaultGroups: string;
  /** Which ML-KEM-768 the inter-site ratchet uses here. */
  mlkem: string;
}

/** What `qentropy version` prints: package, addon binary and the CPU features in use. */
export function versionInfo(): VersionInfo {
  const addon = addonInfo();
  const pq = pqRuntime();
  return {
    package: packageVersion(),
    packageRoot,
    addon: { version: addon.version, file: addon.file, kind: addon.kind },
    node: process.versions.node,
    napi: process.versions.napi ?? 'unknown',
    platform: `${process.platform}-${process.arch}`,
    cpuFeatures: addon.cpuFeatures,
    openssl: pq.openssl,
    hybridGroups: pq.hybridGroups,
    defaultGroups: pq.defaultGroups,
    mlkem: mlKem768().name,
  };
}

/** The levels QENTROPY_SIMD takes (native/common/cpu.cc reads it; this only reports it). */
const SIMD_LEVELS = ['portable', 'none', 'sse4', 'avx2', 'avx512'] as const;

function simdCapNote(value: string | undefined): string {
  if (value === undefined) return '';
  if ((SIMD_LEVELS as readonly string[]).includes(value)) return ` (capped by QENTROPY_SIMD=${value})`;
  return ` (QENTROPY_SIMD=${value} ignored: not one of ${SIMD_LEVELS.join(', ')})`;
}

/**
 * `qentropy version` as labelled lines, in order. A new component (say, the OpenSSL in
 * use) is one more entry here and one more field in VersionInfo.
 */
export function versionLines(info: VersionInfo): Array<[label: string, value: string]> {
  const kind = { prebuild: 'prebuilt', source: 'built from source', env: 'from QENTROPY_ADDON_PATH' }[info.addon.kind];
  const stale = info.addon.version === info.package ? '' : ` — STALE: package is ${info.package}`;
  return [
    ['qentropy', `${info.package} (${info.packageRoot})`],
    ['addon', `${info.addon.version}, ${kind}: ${info.addon.file}${stale}`],
    ['node', `${info.node} (Node-API ${info.napi}, ${info.platform})`],
    ['supports', `${SUPPORTED_NODE}${nodeSupported(info.node) ? '' : ` — this Node ${info.node} is not one of them`}`],
    ['cpu', `${info.cpuFeatures.length ? info.cpuFeatures.join(' ') : '(scalar only)'}${simdCapNote(process.env.QENTROPY_SIMD)}`],
    [
      'openssl',
      `${info.openssl}; hybrid post-quantum TLS groups ${info.hybridGroups ? 'available' : `not available (needs ${SUPPORTED_NODE} with its bundled OpenSSL 3.5)`}; default tls.groups ${info.defaultGroups}`,
    ],
    ['ml-kem', `${info.mlkem} (inter-site ratchet)`],
  ];
}
