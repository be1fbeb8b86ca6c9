// Where the compiled package is: dist/ of this checkout (npm run build:ts), or QENTROPY_DIST.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = process.env.QENTROPY_DIST ?? path.resolve(here, '../../dist');

export function dist(rel) {
  return pathToFileURL(path.join(root, rel)).href;
}
