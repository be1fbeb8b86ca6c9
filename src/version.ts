import { createRequire } from 'node:module';
import path from 'node:path';

import { addonInfo, packageRoot } from './native/addon.js';
import { mlKem768 } from './pqlink/index.js';
import { pqRuntime } from './pqtls/index.js';

const require = createRequire(import.meta.url);

export interface VersionInfo {
  package: string;
  addon: string;
  node: string;
  napi: string;
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
  const pkg = require(path.join(packageRoot, 'package.json')) as { version: string };
  const addon = addonInfo();
  const pq = pqRuntime();
  return {
    package: pkg.version,
    addon: addon.version,
    node: process.versions.node,
    napi: process.versions.napi ?? 'unknown',
    cpuFeatures: addon.cpuFeatures,
    openssl: pq.openssl,
    hybridGroups: pq.hybridGroups,
    defaultGroups: pq.defaultGroups,
    mlkem: mlKem768().name,
  };
}
