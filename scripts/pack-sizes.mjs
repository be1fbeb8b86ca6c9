#!/usr/bin/env node
// Writes the package's sizes into docs/install.md ("What it costs") from the pack step
// itself, so the figures are never typed by hand and never stale: `npm pack --dry-run
// --json` lists exactly what the tarball holds. Run by the release procedure
// (docs/install.md, "Releasing") after `npm run prebuild`, since the prebuilds are most of
// the tarball.
//   node scripts/pack-sizes.mjs [--doc FILE] [--check] [--without-prebuilds]
// --check changes nothing and exits 1 when the document's figures differ from the pack's.
// --without-prebuilds allows a tree that has none (the figures then say so).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BEGIN = '<!-- pack-sizes: written by scripts/pack-sizes.mjs from `npm pack`; do not edit by hand -->';
export const END = '<!-- /pack-sizes -->';

/** What `npm pack --dry-run --json` reports for this tree (no lifecycle scripts: dist/ as built). */
export function packReport(dir = root) {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out)[0];
}

const grouped = (n) => n.toLocaleString('en-US');
const mib = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;

/** The table, from a pack report. */
export function renderSizes(pack) {
  const prebuilds = pack.files
    .filter((f) => /^prebuilds\/[^/]+\/[^/]+\.node$/.test(f.path))
    .sort((a, b) => a.path.localeCompare(b.path))
    .map((f) => `${f.path.split('/')[1]} ${mb(f.size)}`);
  return [
    BEGIN,
    '| | size |',
    '|---|---|',
    `| tarball, packed | ${grouped(pack.size)} bytes (${mib(pack.size)}) |`,
    `| tarball, unpacked | ${grouped(pack.unpackedSize)} bytes (${mib(pack.unpackedSize)}) |`,
    `| files | ${grouped(pack.entryCount)} |`,
    `| prebuilt addons | ${prebuilds.length > 0 ? prebuilds.join(', ') : 'none in this pack'} |`,
    END,
  ].join('\n');
}

/** The document with its marked block replaced by `table`. */
export function replaceBlock(doc, table) {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`no block between "${BEGIN}" and "${END}"`);
  return doc.slice(0, begin) + table + doc.slice(end + END.length);
}

function main(argv) {
  const docArg = argv.indexOf('--doc');
  const doc = docArg >= 0 ? path.resolve(argv[docArg + 1]) : path.join(root, 'docs', 'install.md');
  const pack = packReport();
  if (!argv.includes('--without-prebuilds') && !pack.files.some((f) => f.path.startsWith('prebuilds/'))) {
    process.stderr.write('pack-sizes: the pack has no prebuilds; run `npm run prebuild` first (or pass --without-prebuilds)\n');
    return 2;
  }
  const before = fs.readFileSync(doc, 'utf8');
  const after = replaceBlock(before, renderSizes(pack));
  if (argv.includes('--check')) {
    if (after === before) return 0;
    process.stderr.write(`pack-sizes: ${path.relative(process.cwd(), doc)} is stale; run node scripts/pack-sizes.mjs\n`);
    return 1;
  }
  if (after !== before) fs.writeFileSync(doc, after);
  process.stdout.write(`${path.relative(process.cwd(), doc)}: ${grouped(pack.size)} bytes packed, ${grouped(pack.entryCount)} files\n`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
