// The health gate's native tests in the shape the gate takes: SP 800-90B RCT/APT on byte
// symbols (APT window 512, cutoffs from the assessed min-entropy per byte at false-alarm
// probability 2^-20, start-up test on the first 1,024 samples), the repeated-block check
// and the pattern check, all on a worker thread (src/native/gate.ts).
import { NativeGate } from '../native/gate.js';
import type { BatchBlockTester } from './health-gate.js';

export function createNativeTester(minEntropyPerByte: number): BatchBlockTester {
  const gate = new NativeGate({ minEntropy: minEntropyPerByte, alphaLog2: 20 });
  return { testBlocks: (blocks) => gate.test(blocks) };
}
