// Using an assessment in the running system: the health tests' H and the kernel credit
// (docs/health-and-sinks.md "Taking H from an assessment").
import fs from 'node:fs/promises';

import type { EaJson } from './report.js';
import { assessedMinEntropy } from './report.js';

/**
 * The assessed min-entropy per byte in a file written by `qentropy ea --json` on 8-bit
 * samples of the source. Throws a one-line Error naming the setting when the file is
 * unreadable, not an assessment, or not of 8-bit samples (the health tests and the kernel
 * credit count bytes).
 */
export async function readAssessment(file: string, setting: string): Promise<number> {
  let json: EaJson;
  try {
    json = JSON.parse(await fs.readFile(file, 'utf8')) as EaJson;
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err instanceof SyntaxError ? 'not JSON' : (err as Error).message);
    throw new Error(`${setting}: cannot read the assessment ${file}: ${reason}`);
  }
  const h = json && typeof json === 'object' ? assessedMinEntropy(json) : null;
  if (typeof h !== 'number' || !(h > 0)) throw new Error(`${setting}: ${file} is not the output of qentropy ea --json`);
  if (json.bits_per_symbol !== 8) {
    throw new Error(`${setting}: ${file} assesses ${json.bits_per_symbol}-bit samples; assess the source's bytes (8 bits per symbol)`);
  }
  return h;
}

/** H for the byte-wise health tests: the configured value, lowered to the assessment's. */
export function healthMinEntropy(configuredPerByte: number, assessedPerByte?: number): number {
  return assessedPerByte === undefined ? configuredPerByte : Math.min(configuredPerByte, assessedPerByte);
}

/** Kernel credit in whole bits per byte: never above the assessed min-entropy per byte. */
export function cappedCredit(creditBitsPerByte: number, assessedPerByte?: number): number {
  return assessedPerByte === undefined ? creditBitsPerByte : Math.min(creditBitsPerByte, Math.floor(assessedPerByte));
}
