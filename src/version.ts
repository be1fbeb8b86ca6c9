import { createRequire } from 'node:module';
import path from 'node:path';

import { addonInfo, packageRoot } from './native/addon.js';

const require = createRequire(import.meta.url);

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
}

/** What `qentropy version` prints: package, addon binary and the CPU features in use. */
export function versionInfo(): VersionInfo {
  const pkg = require(path.join(packageRoot, 'package.json')) as { version: string };
  const addon = addonInfo();
  return {
    package: pkg.version,
    packageRoot,
    addon: { version: addon.version, file: addon.file, kind: addon.kind },
    node: process.versions.node,
    napi: process.versions.napi ?? 'unknown',
    platform: `${process.platform}-${process.arch}`,
    cpuFeatures: addon.cpuFeatures,
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
  ];
}
