// A private, package-shaped directory for tests that run qentropy as its own process,
// the way users and systemd run it. Entry points are bundled from src/ by esbuild (about
// a second) so a test always runs the code as it is now, never a stale dist/, and never
// touches the shared dist/. The directory has package.json and links to node_modules, the
// native build and the unit templates (systemd/), so the addon loads and `service install`
// renders exactly as from an installed package.
import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface TestPackage {
  /** The directory (0755, so an unprivileged child can read it). */
  readonly dir: string;
  /** The bundled CLI: `node <cli> args...` behaves as `qentropy args...`. */
  readonly cli: string;
  /**
   * Bundles another entry point, given as TypeScript source that may import src/ modules
   * by absolute path (see `srcPath`), into `<dir>/<name>`; returns its path.
   */
  bundle(name: string, source: string): string;
  remove(): void;
}

/** Absolute path of a module under src/, for the sources passed to `bundle`. */
export function srcPath(relative: string): string {
  return path.join(repoRoot, 'src', relative);
}

export function createTestPackage(prefix: string): TestPackage {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `qentropy-${prefix}-`));
  fs.chmodSync(dir, 0o755);
  fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(dir, 'package.json'));
  fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'));
  for (const shipped of ['build', 'prebuilds', 'systemd']) {
    if (fs.existsSync(path.join(repoRoot, shipped))) fs.symlinkSync(path.join(repoRoot, shipped), path.join(dir, shipped));
  }

  const bundle = (name: string, source: string): string => {
    const entry = path.join(dir, `${name}.entry.ts`);
    const out = path.join(dir, name);
    fs.writeFileSync(entry, source);
    const esbuild = path.join(repoRoot, 'node_modules', '.bin', 'esbuild');
    const args = [entry, '--bundle', '--platform=node', '--format=esm', '--packages=external', `--outfile=${out}`, '--log-level=error'];
    const r = spawnSync(esbuild, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`esbuild failed for ${name}: ${r.stderr || r.error?.message}`);
    return out;
  };

  const cli = bundle(
    'qentropy.js',
    `import { main } from ${JSON.stringify(srcPath('cli/main.ts'))};\nprocess.exitCode = await main(process.argv.slice(2));\n`,
  );
  return { dir, cli, bundle, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node file args...` to completion; never rejects (a failure is a non-zero code). */
export function runNode(file: string, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file, ...args], { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Ends a child process that is still running (SIGTERM) and resolves once it has exited. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
