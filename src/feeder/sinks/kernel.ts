// The kernel sink: RNDADDENTROPY into /dev/random with the configured credit, then
// RNDRESEEDCRNG so the kernel generator uses the bytes at once. Timer-driven (Linux >= 5.18
// never wakes writers once its generator is ready); on older kernels it also wakes when
// the pool's entropy count falls below write_wakeup_threshold, as rngd's poll() does.
import fs from 'node:fs/promises';

import { isKernelSinkError, KernelRandom, MAX_CREDIT_BITS_PER_BYTE, poolWakesWriters } from '../../native/kernel.js';
import { SinkError, type FeedOutcome, type Sink } from './types.js';

export interface KernelSinkOptions {
  device: string;
  /** Integer 0..8 bits credited per byte (default 0: mix only, for network-delivered data). */
  creditBitsPerByte: number;
  bytes: number;
  intervalMs: number;
  /** How often to look at the pool on kernels that still wake writers (default 2 s). */
  wakeupCheckMs?: number;
}

export class KernelSink implements Sink {
  readonly name = 'kernel';
  readonly kind = 'kernel' as const;
  readonly intervalMs: number;
  private device: KernelRandom | undefined;
  private lastEntropyCount: number | undefined;

  constructor(private readonly options: KernelSinkOptions) {
    if (!Number.isInteger(options.creditBitsPerByte) || options.creditBitsPerByte < 0 || options.creditBitsPerByte > MAX_CREDIT_BITS_PER_BYTE) {
      throw new RangeError(`creditBitsPerByte must be an integer from 0 to ${MAX_CREDIT_BITS_PER_BYTE}`);
    }
    this.intervalMs = options.intervalMs;
  }

  async open(): Promise<void> {
    try {
      this.device = new KernelRandom(this.options.device);
    } catch (err) {
      throw toSinkError(err);
    }
  }

  wants(): number {
    return this.options.bytes;
  }

  async feed(bytes: Buffer, maxCreditBitsPerByte?: number): Promise<FeedOutcome> {
    if (!this.device) throw new SinkError('kernel sink is not open', 'ECLOSED');
    try {
      const credit = maxCreditBitsPerByte === undefined ? this.options.creditBitsPerByte : Math.min(this.options.creditBitsPerByte, maxCreditBitsPerByte);
      const creditedBits = this.device.addEntropy(bytes, credit);
      this.device.reseedCrng();
      this.lastEntropyCount = this.device.entropyCount();
      return { bytes: bytes.length, creditedBits };
    } catch (err) {
      throw toSinkError(err);
    }
  }

  watch(wake: () => void): () => void {
    if (!poolWakesWriters()) return () => undefined;
    // poll(POLLOUT) on the device is what rngd uses; Node cannot poll a character device,
    // so read the same two numbers the kernel compares (cheap procfs reads).
    const timer = setInterval(() => {
      void Promise.all([
        fs.readFile('/proc/sys/kernel/random/entropy_avail', 'utf8'),
        fs.readFile('/proc/sys/kernel/random/write_wakeup_threshold', 'utf8'),
      ])
        .then(([avail, threshold]) => {
          if (Number(avail) < Number(threshold)) wake();
        })
        .catch(() => undefined);
    }, this.options.wakeupCheckMs ?? 2_000);
    timer.unref();
    return () => clearInterval(timer);
  }

  async details(): Promise<Record<string, unknown>> {
    return {
      device: this.options.device,
      creditBitsPerByte: this.options.creditBitsPerByte,
      ...(this.lastEntropyCount !== undefined ? { entropyCount: this.lastEntropyCount } : {}),
      poolWakesWriters: poolWakesWriters(),
    };
  }

  async close(): Promise<void> {
    this.device?.close();
    this.device = undefined;
  }
}

function toSinkError(err: unknown): SinkError {
  if (isKernelSinkError(err)) {
    // EPERM will not go away by retrying: no CAP_SYS_ADMIN, or a user namespace.
    return new SinkError(err.message, err.code, err.code === 'EPERM' || err.code === 'ENOTTY' || err.code === 'ENOENT');
  }
  return new SinkError(err instanceof Error ? err.message : String(err), 'ERROR');
}
