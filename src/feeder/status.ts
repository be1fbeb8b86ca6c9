// The feeder's state as `qentropy feeder status` and /metrics show it.
import type { CombineStatus } from './combiner.js';
import type { SinkKind } from './sinks/types.js';
import type { HealthTestName, SourceStatus } from './source.js';

export type SinkState =
  /** Not opened yet, or waiting to retry opening. */
  | 'starting'
  /** Last feed succeeded. */
  | 'ok'
  /** Waiting for bytes: the buffer ran dry. */
  | 'waiting'
  /** Last feed or open failed; it is retried at its cadence. */
  | 'failing'
  /** Nothing to feed (e.g. every PKCS#11 slot refuses seeds). */
  | 'idle'
  /** Stopped until the config is reloaded: retrying cannot help (EPERM, wrong PIN). */
  | 'disabled';

export interface SinkStatus {
  name: string;
  kind: SinkKind;
  state: SinkState;
  intervalMs: number;
  feeds: number;
  bytesFed: number;
  creditedBits: number;
  errors: number;
  lastFeedAt?: number;
  lastError?: string;
  lastErrorCode?: string;
  lastErrorAt?: number;
  details?: Record<string, unknown>;
}

export interface FeederStatus {
  pid: number;
  startedAt: number;
  updatedAt: number;
  running: boolean;
  buffer: {
    level: number;
    capacity: number;
    lowWater: number;
    locked: boolean;
    lockReason?: string;
    /** Bytes zeroed out of the buffer because a source that had filled it was found not random. */
    bytesDiscarded: number;
  };
  bytesPulled: number;
  /** Bytes that passed every test and went to the buffer, all sources. */
  bytesPassed: number;
  /** Failed test verdicts, all sources, by test. */
  healthFailures: Record<HealthTestName, number>;
  sources: SourceStatus[];
  sinks: SinkStatus[];
  /** The combining mode (`feeder.combine: "all"`); absent in failover. */
  combine?: CombineStatus;
}
