// The page's static files (./assets): shipped in the package as they are, no build step.
// From the sources they sit beside this module; from dist/ they are found in the
// package's src/quality-page/assets (listed in package.json "files").
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CANDIDATES = ['./assets', '../../../src/quality-page/assets'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The files the browser may fetch, by name under /assets/ (index.html is served at /). */
export const SERVED = ['index.html', 'page.css', 'app.js', 'view.js', 'icon.svg'] as const;

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

let dir: string | undefined;

/** The assets directory; throws naming the places looked in when the package lacks it. */
export function assetDir(): string {
  dir ??= CANDIDATES.find((d) => fs.existsSync(path.join(d, 'view.js')));
  if (!dir) throw new Error(`the quality page's files are missing (looked in ${CANDIDATES.join(', ')})`);
  return dir;
}

/** Reads every served file once (they are small and change only with the package). */
export function loadAssets(): Map<string, Asset> {
  const root = assetDir();
  const assets = new Map<string, Asset>();
  for (const name of SERVED) {
    const body = fs.readFileSync(path.join(root, name));
    const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, type: TYPES[path.extname(name)]!, etag });
  }
  return assets;
}

export function readAssetText(name: 'page.css'): string {
  return fs.readFileSync(path.join(assetDir(), name), 'utf8');
}

/** view.js, the renderer the browser runs, loaded into Node for the HTML report. */
export async function loadView(): Promise<typeof import('./assets/view.js')> {
  return (await import(pathToFileURL(path.join(assetDir(), 'view.js')).href)) as typeof import('./assets/view.js');
}
