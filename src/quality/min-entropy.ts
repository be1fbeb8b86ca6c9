// SP 800-90B min-entropy of a quality run's bytes (docs/quality.md "Min-entropy"): the
// non-IID track on the first 10^6 bytes as 8-bit samples, beside the STS verdict.
import os from 'node:os';

import { assessBytes } from '../ea/index.js';

/** Samples assessed per run: SP 800-90B's 10^6 (the run holds 12.5 x 10^6 bytes by default). */
export const ASSESSED_SAMPLES = 1_000_000;
/** Fewer bytes than this (a tiny test run) and no assessment is made: MultiMCW needs 4,096. */
export const MIN_ASSESSED_SAMPLES = 4096;

export interface RunMinEntropy {
  /** Samples (bytes) assessed. */
  samples: number;
  /** Min-entropy per byte from the byte-wise estimators. */
  h_original: number;
  /** Min-entropy per bit from the bitstring estimators. */
  h_bitstring: number;
  /** min(h_original, 8 x h_bitstring): bits of min-entropy per byte. */
  assessed: number;
}

/** `threads` as the battery takes it: 0 = every core. */
export async function assessRunMinEntropy(data: Uint8Array, threads: number): Promise<RunMinEntropy | null> {
  if (threads === 0) threads = os.availableParallelism();
  const samples = Math.min(data.length, ASSESSED_SAMPLES);
  if (samples < MIN_ASSESSED_SAMPLES) return null;
  const result = await assessBytes(data.subarray(0, samples), { bitsPerSymbol: 8, threads });
  const n = result.nonIid!;
  // A run whose bytes use fewer than three distinct values has no bitstring track.
  return { samples, h_original: n.hOriginal ?? 0, h_bitstring: n.hBitstring ?? n.hAssessed / 8, assessed: n.hAssessed };
}
