// `qentropy version`: names the addon binary in use and where it came from, and flags a
// binary whose version stamp is not the package's.
import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { versionInfo, versionLines } from '../src/version.js';
import { repoRoot } from './helpers/package.js';

describe('qentropy version', () => {
  it('reports the loaded binary, its stamp and where it came from', () => {
    const info = versionInfo();
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect(info.package).toBe(pkg.version);
    expect(info.addon.version).toBe(pkg.version);
    expect(fs.existsSync(info.addon.file)).toBe(true);
    // A checkout loads its own build (node-gyp-build prefers build/Release over prebuilds/).
    const expected = process.env.QENTROPY_ADDON_PATH ? 'env' : 'source';
    expect(info.addon.kind).toBe(expected);
    const lines = Object.fromEntries(versionLines(info));
    expect(lines.addon).toBe(`${pkg.version}, ${expected === 'env' ? 'from QENTROPY_ADDON_PATH' : 'built from source'}: ${info.addon.file}`);
    expect(lines.node).toBe(`${process.versions.node} (Node-API ${process.versions.napi}, ${process.platform}-${process.arch})`);
  });

  it('flags a binary whose stamp differs from the package version', () => {
    const info = versionInfo();
    const stale = { ...info, addon: { ...info.addon, kind: 'prebuild' as const, version: '0.0.9' } };
    const lines = Object.fromEntries(versionLines(stale));
    expect(lines.addon).toBe(`0.0.9, prebuilt: ${info.addon.file} — STALE: package is ${info.package}`);
  });
});
