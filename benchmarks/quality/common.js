// Shared by the quality benchmarks: where the compiled sources are.
import path from 'node:path';

/** The compiled sources (npm run build:ts); QENTROPY_DIST points elsewhere for a private build. */
export const dist = process.env.QENTROPY_DIST
  ? new URL(`file://${path.resolve(process.env.QENTROPY_DIST)}/`)
  : new URL('../../dist/src/', import.meta.url);

export const load = (module) => import(new URL(module, dist).href);
