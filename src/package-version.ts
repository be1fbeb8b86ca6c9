// The package's version alone. The CLI stamps it on every command (-V), so it comes from
// here rather than version.ts, whose imports (the TLS and ML-KEM runtime probes) take about
// 50 ms to load: a cost `qentropy ea FILE` and every other command would pay for nothing.
import { createRequire } from 'node:module';
import path from 'node:path';

import { packageRoot } from './native/addon.js';

const require = createRequire(import.meta.url);

/** The `version` of the package.json this code belongs to. */
export function packageVersion(): string {
  return (require(path.join(packageRoot, 'package.json')) as { version: string }).version;
}
