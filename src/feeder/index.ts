// The feeder: seeds the kernel pool and HSMs from entropy APIs (docs/feeder.md).
export { FeedBuffer, type FeedBufferOptions } from './buffer.js';
export { buildFeeder, type BuildFeederOptions } from './build.js';
export { Feeder, type FeederOptions } from './feeder.js';
export { FeederLedger } from './ledger.js';
export { createFeederMetrics } from './metrics.js';
export { systemdNotifier, type SystemdNotifier } from './sdnotify.js';
export { FileSink } from './sinks/file.js';
export { KernelSink } from './sinks/kernel.js';
export { Pkcs11FeedSink } from './sinks/pkcs11.js';
export { SinkError, type FeedOutcome, type Sink, type SinkKind } from './sinks/types.js';
export { FeederSource, type FeederSourceOptions, type SourceStatus } from './source.js';
export type { FeederStatus, SinkState, SinkStatus } from './status.js';
export { readStatusFile, writeStatusFile } from './status-file.js';
