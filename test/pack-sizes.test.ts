// docs/install.md's package sizes come from the pack step (scripts/pack-sizes.mjs), not from
// hand-typed figures: the table the script writes holds exactly what `npm pack` reports.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { repoRoot } from './helpers/package.js';

interface PackReport {
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: Array<{ path: string; size: number }>;
}
const script = path.join(repoRoot, 'scripts', 'pack-sizes.mjs');
const { BEGIN, END, packReport, renderSizes } = (await import(script)) as {
  BEGIN: string;
  END: string;
  packReport: () => PackReport;
  renderSizes: (pack: PackReport) => string;
};
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-pack-sizes-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('pack sizes in docs/install.md', () => {
  it('renders packed and unpacked size, file count and each prebuild from a pack report', () => {
    const table = renderSizes({
      size: 1_747_868,
      unpackedSize: 4_000_000,
      entryCount: 464,
      files: [
        { path: 'prebuilds/linux-x64/qentropy.node', size: 1_100_000 },
        { path: 'prebuilds/linux-arm64/qentropy.node', size: 920_000 },
        { path: 'dist/src/index.js', size: 100 },
      ],
    });
    expect(table.split('\n')).toEqual([
      BEGIN,
      '| | size |',
      '|---|---|',
      '| tarball, packed | 1,747,868 bytes (1.7 MiB) |',
      '| tarball, unpacked | 4,000,000 bytes (3.8 MiB) |',
      '| files | 464 |',
      '| prebuilt addons | linux-arm64 0.92 MB, linux-x64 1.10 MB |',
      END,
    ]);
  });

  it('the script rewrites only the marked block, with the figures npm pack gives for this tree; --check then passes', () => {
    const doc = path.join(dir, 'install.md');
    fs.copyFileSync(path.join(repoRoot, 'docs', 'install.md'), doc);
    const original = fs.readFileSync(doc, 'utf8');
    const run = (...args: string[]) => spawnSync(process.execPath, [script, '--doc', doc, '--without-prebuilds', ...args], { cwd: repoRoot, encoding: 'utf8' });
    const r = run();
    expect(r.status, r.stderr).toBe(0);
    const written = fs.readFileSync(doc, 'utf8');
    const expected = renderSizes(packReport());
    expect(written).toContain(expected);
    expect(written.replace(expected, '')).toBe(original.replace(original.slice(original.indexOf(BEGIN), original.indexOf(END) + END.length), ''));
    expect(run('--check').status).toBe(0);
  });
});
