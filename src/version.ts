import { addonInfo, packageRoot } from './native/addon.js';
import { packageVersion } from './package-version.js';
import { mlKem768 } from './pqlink/index.js';
import { pqRuntime } from './pqtls/index.js';

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
    ['cpu', info.cpuFeatures.length ? info.cpuFeatures.join(' ') : '(scalar only)'],
    [
      'openssl',
      `${info.openssl}; hybrid post-quantum TLS groups ${info.hybridGroups ? 'available' : 'not available (needs Node.js 22.20+, 24 or 26)'}; default tls.groups ${info.defaultGroups}`,
    ],
    ['ml-kem', `${info.mlkem} (inter-site ratchet)`],
  ];
}
