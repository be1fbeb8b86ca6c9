// Builds the source named by config `entropy.source` (product.md §3):
//   hwrng | device:PATH | rdseed | upstream | getrandom
// Raw physical sources (hwrng, device, rdseed) and upstream are wrapped in the health gate.
import type { EntropyClientOptions } from '../client/index.js';
import { DeviceSource } from './device.js';
import { GetrandomSource } from './getrandom.js';
import { HealthGatedSource, type BlockTester, type HealthEvent, type RawSource } from './health-gate.js';
import { RdseedSource } from './rdseed.js';
import type { EntropySource } from './types.js';
import { UpstreamSource } from './upstream.js';

export { DeviceSource } from './device.js';
export { GetrandomSource } from './getrandom.js';
export { HealthGatedSource, HEALTH_BLOCK } from './health-gate.js';
export type {
  BatchBlockTester,
  BlockTester,
  BlockVerdict,
  HealthEvent,
  RawSource,
  HealthGateOptions,
  SyncBlockTester,
} from './health-gate.js';
export { RdseedSource, rdseedAvailable } from './rdseed.js';
export { UpstreamSource, type UpstreamOptions } from './upstream.js';
export { SourceNotRandomError, SourceOutOfServiceError, type EntropySource, type SourceHealth, type SourceState } from './types.js';

/**
 * A `device:` source's read size (product.md's `entropy.pool.chunkBytes` overrides it): a
 * QRNG card or a vendor's FIFO delivers tens to hundreds of MB/s, and each read is a hop
 * through the thread pool and a batch for the gate, so 64 KiB reads kept the fill path near
 * 200 MB/s however fast the device (benchmarks/README.md). `hwrng` keeps 64 KiB: the
 * kernel's hardware RNGs are slow and its reads wait until the whole request is filled.
 */
export const DEVICE_READ_BYTES = 1024 * 1024;

export type SourceSpec =
  | { kind: 'hwrng' }
  | { kind: 'device'; path: string }
  | { kind: 'rdseed' }
  | { kind: 'upstream' }
  | { kind: 'getrandom' };

/** Parses `hwrng`, `device:PATH`, `rdseed`, `upstream` or `getrandom`; throws a one-line error. */
export function parseSourceSpec(text: string): SourceSpec {
  if (text === 'hwrng' || text === 'rdseed' || text === 'upstream' || text === 'getrandom') return { kind: text };
  if (text.startsWith('device:')) {
    const path = text.slice('device:'.length);
    if (!path.startsWith('/')) throw new Error(`source '${text}': device path must be absolute`);
    return { kind: 'device', path };
  }
  throw new Error(`source '${text}': expected hwrng, device:PATH, rdseed, upstream or getrandom`);
}

export interface CreateSourceOptions {
  /** For raw physical sources: makes the stateful SP 800-90B tester. */
  createTester?: () => BlockTester;
  /** Consecutive failing 1,024-byte blocks that take a raw source out of service. */
  failureLimit?: number;
  onHealthEvent?: (event: HealthEvent) => void;
  /** Required for `upstream`. */
  upstream?: EntropyClientOptions & { blocksPerRequest?: number };
}

export function createSource(spec: SourceSpec, options: CreateSourceOptions = {}): EntropySource {
  const gate = (raw: RawSource): EntropySource => {
    if (!options.createTester) throw new Error(`source ${raw.name}: health tests are required for raw sources`);
    return new HealthGatedSource(raw, {
      tester: options.createTester(),
      ...(options.failureLimit !== undefined ? { failureLimit: options.failureLimit } : {}),
      ...(options.onHealthEvent ? { onEvent: options.onHealthEvent } : {}),
    });
  };
  switch (spec.kind) {
    case 'hwrng':
      return gate(new DeviceSource('hwrng', '/dev/hwrng'));
    case 'device':
      return gate(new DeviceSource(`device:${spec.path}`, spec.path, { preferredReadBytes: DEVICE_READ_BYTES }));
    case 'rdseed':
      return gate(new RdseedSource());
    case 'upstream':
      if (!options.upstream) throw new Error('source upstream: entropy.upstream (url and token) must be configured');
      return gate(new UpstreamSource(options.upstream));
    case 'getrandom':
      return new GetrandomSource();
  }
}
