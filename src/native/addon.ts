// Loads the native addon (qentropy.node) once. Resolution order:
//   1. QENTROPY_ADDON_PATH, an explicit .node file (used by developers testing a build
//      made elsewhere, e.g. a sanitizer or alternative build directory);
//   2. node-gyp-build: build/Release of this checkout, then ./prebuilds for this platform.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** The package root: two levels above this file in both src/ (tsx/vitest) and dist/src/. */
export const packageRoot: string = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(start: string): string {
  let dir = start;
  for (;;) {
    try {
      const pkg = require(path.join(dir, 'package.json')) as { name?: string };
      if (pkg.name === 'qentropy') return dir;
    } catch {
      // keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`qentropy: package.json not found above ${start}`);
    dir = parent;
  }
}

/** Which binary was loaded, and why that one. */
export interface AddonSource {
  /** Absolute path of the .node file. */
  file: string;
  /** `env` (QENTROPY_ADDON_PATH), `prebuild` (prebuilds/), or `source` (a local build). */
  kind: 'env' | 'prebuild' | 'source';
}

function locate(): AddonSource {
  const explicit = process.env.QENTROPY_ADDON_PATH;
  if (explicit) return { file: path.resolve(explicit), kind: 'env' };
  const nodeGypBuild = require('node-gyp-build') as { resolve(dir: string): string };
  const file = nodeGypBuild.resolve(packageRoot);
  return { file, kind: file.includes(`${path.sep}prebuilds${path.sep}`) ? 'prebuild' : 'source' };
}

/** Where the addon in use came from (`qentropy version` prints it). */
export const addonSource: AddonSource = locate();

/**
 * The raw addon. Each module in src/native/ wraps the functions it needs with types;
 * nothing else should touch this object directly.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const addon: any = require(addonSource.file);

/** Version of the addon binary, where it was loaded from, and the CPU features its kernels use. */
export function addonInfo(): { version: string; file: string; kind: AddonSource['kind']; cpuFeatures: string[] } {
  return {
    version: String(addon.addonVersion),
    file: addonSource.file,
    kind: addonSource.kind,
    cpuFeatures: [...(addon.cpuFeatures as string[])],
  };
}
