export { EntropyPool, type PoolOptions, type PoolStats } from './pool.js';
export { PoolFiller, type FillerOptions, type FillerLogger } from './filler.js';
