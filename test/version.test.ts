// `qentropy version`: names the addon binary in use and where it came from, and flags a
// binary whose version stamp is not the package's.
import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { nodeSupported, SUPPORTED_NODE, SUPPORTED_NODE_ENGINES, versionInfo, versionLines } from '../src/version.js';
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

  it('names the supported Node lines, the same as package.json engines, and flags any other', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(SUPPORTED_NODE_ENGINES);
    expect(Object.fromEntries(versionLines(versionInfo())).supports).toBe(SUPPORTED_NODE);
    expect(['22.20.0', '22.23.3', '24.0.0', '24.21.0', '26.12.1'].every(nodeSupported)).toBe(true);
    expect(['20.20.2', '22.19.0', '23.11.0', '25.2.1', '27.0.0'].some(nodeSupported)).toBe(false);
    const old = { ...versionInfo(), node: '20.20.2' };
    expect(Object.fromEntries(versionLines(old)).supports).toBe(`${SUPPORTED_NODE} — this Node 20.20.2 is not one of them`);
  });

  it('flags a binary whose stamp differs from the package version', () => {
    const info = versionInfo();
    const stale = { ...info, addon: { ...info.addon, kind: 'prebuild' as const, version: '0.0.9' } };
    const lines = Object.fromEntries(versionLines(stale));
    expect(lines.addon).toBe(`0.0.9, prebuilt: ${info.addon.file} — STALE: package is ${info.package}`);
  });
});
