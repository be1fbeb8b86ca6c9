// The SP 800-90B tester (native, stateful across blocks) in the shape the health gate
// takes: byte symbols, APT window 512, cutoffs from the assessed min-entropy per byte at
// false-alarm probability 2^-20, start-up test on the first 1,024 samples.
import { HealthTester } from '../native/health.js';
import type { BlockTester, BlockVerdict } from './health-gate.js';

export function createNativeTester(minEntropyPerByte: number): BlockTester {
  const tester = new HealthTester({ mode: 'bytes', minEntropy: minEntropyPerByte, alphaLog2: 20 });
  return {
    feed(block: Buffer): BlockVerdict {
      const result = tester.feed(block);
      return {
        passed: result.passed,
        ready: result.ready,
        failedTests: result.firstFailure ? [result.firstFailure.test] : [],
        ...(result.firstFailure ? { detail: result.firstFailure.message } : {}),
      };
    },
  };
}
