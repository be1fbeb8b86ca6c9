// `rdseed`: the CPU's RDSEED instruction, through a small native function that runs on a
// worker thread. Its output is treated as raw physical-source data: createSource puts it
// behind the health gate like any device.
import { addon } from '../native/addon.js';
import type { RawSource } from './health-gate.js';

interface RdseedAddon {
  rdseedAvailable(): boolean;
  rdseedFill(size: number): Promise<Buffer>;
}

const native = addon as Partial<RdseedAddon>;

export function rdseedAvailable(): boolean {
  return typeof native.rdseedAvailable === 'function' && native.rdseedAvailable();
}

export class RdseedSource implements RawSource {
  readonly name = 'rdseed';
  readonly development = false;
  /** Filled on a worker thread; 1 MiB is a few ms of RDSEED. */
  readonly preferredReadBytes = 1024 * 1024;

  constructor() {
    if (typeof native.rdseedFill !== 'function') {
      throw new Error('rdseed: this build of the qentropy addon has no RDSEED support');
    }
    if (!rdseedAvailable()) throw new Error('rdseed: this CPU has no RDSEED instruction');
  }

  read(n: number): Promise<Buffer> {
    return native.rdseedFill!(n);
  }

  async close(): Promise<void> {}
}
