import { createRequire } from 'node:module';
import path from 'node:path';

import { addonInfo, packageRoot } from './native/addon.js';

const require = createRequire(import.meta.url);

export interface VersionInfo {
  package: string;
  addon: string;
  node: string;
  napi: string;
  cpuFeatures: string[];
}

/** What `qentropy version` prints: package, addon binary and the CPU features in use. */
export function versionInfo(): VersionInfo {
  const pkg = require(path.join(packageRoot, 'package.json')) as { version: string };
  const addon = addonInfo();
  return {
    package: pkg.version,
    addon: addon.version,
    node: process.versions.node,
    napi: process.versions.napi ?? 'unknown',
    cpuFeatures: addon.cpuFeatures,
  };
}
