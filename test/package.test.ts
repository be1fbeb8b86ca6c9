// What `npm pack` puts in the tarball: everything the installed package needs at run time
// (every module the CLI reaches, the install script, the prebuilds for linux-x64 and
// linux-arm64, the sources of the source-build fallback, the unit templates), and nothing
// else (no tests, fuzz targets, source maps, benchmarks or build trees). Each prebuild's
// version stamp must equal package.json's version: a stale prebuild fails here.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { beforeAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string; scripts: Record<string, string>; bin: Record<string, string> };
const PREBUILDS = ['linux-x64', 'linux-arm64'].map((t) => `prebuilds/${t}/qentropy.napi.glibc.node`);

let packed: Set<string>;
beforeAll(() => {
  // --ignore-scripts: list what the current dist/ and prebuilds/ would give, without
  // rebuilding the shared dist/ (setup's npm ci built it through prepare).
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: repoRoot, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const [info] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
  packed = new Set(info.files.map((f) => f.path));
}, 60_000);

/** Every file of dist/src that the CLI entry point reaches through its imports (esbuild's view). */
function runtimeModules(): string[] {
  const meta = path.join(fs.mkdtempSync(path.join(repoRoot, 'build', 'meta-')), 'meta.json');
  const esbuild = path.join(repoRoot, 'node_modules', '.bin', 'esbuild');
  const r = spawnSync(esbuild, [path.join(repoRoot, pkg.bin.qentropy!), '--bundle', '--platform=node', '--format=esm', '--packages=external', `--metafile=${meta}`, '--outfile=/dev/null', '--log-level=error'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const inputs = Object.keys((JSON.parse(fs.readFileSync(meta, 'utf8')) as { inputs: Record<string, unknown> }).inputs);
  fs.rmSync(path.dirname(meta), { recursive: true, force: true });
  return inputs.map((p) => path.relative(repoRoot, path.resolve(process.cwd(), p)));
}

describe('npm pack', () => {
  it('carries every module the installed CLI loads, and the files it reads at run time', () => {
    fs.mkdirSync(path.join(repoRoot, 'build'), { recursive: true });
    const modules = runtimeModules();
    expect(modules.length).toBeGreaterThan(50);
    expect(modules).toContain('dist/src/cli/main.js');
    const missing = modules.filter((m) => !packed.has(m));
    expect(missing).toEqual([]);

    const needed = [
      'package.json',
      'LICENSE',
      'README.md',
      pkg.bin.qentropy!,
      // npm runs it at install: `"install": "node scripts/install-native.cjs"`
      /node (\S+)/.exec(pkg.scripts.install!)![1]!,
      ...PREBUILDS,
      // what `qentropy service install` renders
      'systemd/qentropy.service',
      'systemd/qentropy-feeder.service',
      'systemd/qentropy.sysusers.conf',
      'systemd/qentropy.tmpfiles.conf',
      // the source-build fallback
      'CMakeLists.txt',
      'dist/src/index.d.ts',
      // the quality page's static files, served as they are (src/quality-page/assets.ts)
      ...spawnSync('git', ['ls-files', 'src/quality-page/assets'], { cwd: repoRoot, encoding: 'utf8' }).stdout.split('\n').filter(Boolean),
    ];
    expect(needed.filter((f) => !packed.has(f))).toEqual([]);
    // Every C++ source the addon is built from (all of native/ but the tests and fuzz targets).
    const sources = spawnSync('git', ['ls-files', 'native'], { cwd: repoRoot, encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    const addonSources = sources.filter((f) => !/^native\/(tests|fuzz)\//.test(f));
    expect(addonSources.length).toBeGreaterThan(20);
    expect(addonSources.filter((f) => !packed.has(f))).toEqual([]);
  });

  it('carries nothing that does not run: no tests, fuzz targets, source maps, benchmarks or build trees', () => {
    // src/ only for the quality page's static files, which are served from there.
    const unwanted = [...packed].filter(
      (f) =>
        /^(test|benchmarks|build|src\/(?!quality-page\/assets\/)|scripts\/(?!install-native\.cjs$)|native\/(tests|fuzz))/.test(f) ||
        f.endsWith('.map') ||
        (f.endsWith('.ts') && !f.endsWith('.d.ts')),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('prebuilds', () => {
  it.each(PREBUILDS)('%s is stamped with the package version (npm run prebuild after a version change)', (file) => {
    const full = path.join(repoRoot, file);
    expect(fs.existsSync(full), `${file} is missing: run npm run prebuild`).toBe(true);
    const text = fs.readFileSync(full).toString('latin1');
    const stamp = /qentropy-addon-version=([^\0]*)\0/.exec(text);
    expect(stamp?.[1], `${file}: stale prebuild, run npm run prebuild`).toBe(pkg.version);
  });

  it('the prebuild for this machine loads and reports the package version', () => {
    const require = createRequire(import.meta.url);
    const addon = require(path.join(repoRoot, 'prebuilds', `linux-${process.arch}`, 'qentropy.napi.glibc.node')) as { addonVersion: string; cpuFeatures: string[] };
    expect(addon.addonVersion).toBe(pkg.version);
    expect(Array.isArray(addon.cpuFeatures)).toBe(true);
  });
});
