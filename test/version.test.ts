// `qentropy version`: names the addon binary in use and where it came from, and flags a
// binary whose version stamp is not the package's.
import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { nodeSupported, SUPPORTED_NODE, SUPPORTED_NODE_ENGINES, versionInfo, versionLines } from '../src/version.js';
import { createTestPackage, repoRoot, runNode } from './helpers/package.js';

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

  // QENTROPY_SIMD lowers the vector code the kernels may pick, so one machine can run and
  // benchmark a smaller CPU's paths (benchmarks/ea); the cpu line shows what is in use.
  it('QENTROPY_SIMD caps the vector paths, and the cpu line says so', async () => {
    const pkg = createTestPackage('version-simd');
    try {
      const cpuLine = async (env: Record<string, string>): Promise<string> => {
        const r = await runNode(pkg.cli, ['version'], env);
        expect(r.code).toBe(0);
        return /^cpu\s+(.*)$/m.exec(r.stdout)?.[1] ?? '';
      };
      const full = versionInfo().cpuFeatures;
      const avx2 = await cpuLine({ QENTROPY_SIMD: 'avx2' });
      expect(avx2).toMatch(/\(capped by QENTROPY_SIMD=avx2\)$/);
      expect(avx2).not.toMatch(/avx512/);
      expect(avx2.includes(' avx2 ') || avx2.startsWith('avx2 ')).toBe(full.includes('avx2'));
      const portable = await cpuLine({ QENTROPY_SIMD: 'portable' });
      expect(portable).not.toMatch(/avx|ssse3|sse4|fma/);
      const unknown = await cpuLine({ QENTROPY_SIMD: 'avx9000' });
      expect(unknown).toMatch(/QENTROPY_SIMD=avx9000 ignored: not one of portable, none, sse4, avx2, avx512/);
      // An unknown value caps nothing.
      for (const feature of full) expect(unknown.split(' ')).toContain(feature);
    } finally {
      pkg.remove();
    }
  });
});
