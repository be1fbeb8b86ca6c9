// The PKCS#11 sink: C_SeedRandom on every slot whose token has the configured label
// (default 48 bytes every 10 s, as the provider's own HSM seeder does). Each slot gets its
// own bytes. A slot that refuses seeds is reported once by the native layer and then left
// alone; once no slot is left to seed, the sink fails for good with one plain error, which
// disables it until a reload (the daemon and the other sinks go on); a module that cannot be loaded or a token that is missing makes open() fail, and
// the feeder tries again later without stopping the other sinks.
import { Pkcs11Sink as NativePkcs11Sink, type Pkcs11Error, type Pkcs11SlotState } from '../../native/pkcs11.js';
import { SinkError, type FeedOutcome, type Sink } from './types.js';

export interface Pkcs11SinkOptions {
  module: string;
  tokenLabel: string;
  /** The user PIN, read from the configured file; never logged. */
  pin?: string;
  /** Bytes per slot per feed (default 48). */
  bytes: number;
  intervalMs: number;
  mixOsRandom: boolean;
}

/** Something the sink wants said once in the log (e.g. a slot that refuses seeds). */
export type Pkcs11Notice = (message: string, fields: Record<string, unknown>) => void;

export class Pkcs11FeedSink implements Sink {
  readonly kind = 'pkcs11' as const;
  readonly name: string;
  readonly intervalMs: number;
  private session: NativePkcs11Sink | undefined;
  private slotStates: Pkcs11SlotState[] = [];

  constructor(
    private readonly options: Pkcs11SinkOptions,
    private readonly notice: Pkcs11Notice = () => undefined,
  ) {
    this.name = `pkcs11:${options.tokenLabel}`;
    this.intervalMs = options.intervalMs;
  }

  async open(): Promise<void> {
    try {
      this.session = await NativePkcs11Sink.open({
        modulePath: this.options.module,
        tokenLabel: this.options.tokenLabel,
        ...(this.options.pin !== undefined ? { pin: this.options.pin } : {}),
        mixOsRandom: this.options.mixOsRandom,
      });
      this.slotStates = await this.session.slots();
    } catch (err) {
      const e = err as Pkcs11Error;
      const code = typeof e.code === 'string' ? e.code : 'ERROR';
      // A wrong PIN is not retried: every attempt would bring the token closer to locking.
      const permanent = code === 'CKR_PIN_INCORRECT' || code === 'CKR_PIN_LOCKED' || code === 'CKR_PIN_INVALID';
      throw new SinkError(`${this.name} (${this.options.module}): ${e.message}`, code, permanent);
    }
  }

  /** Bytes for every slot that still takes seeds. */
  wants(): number {
    return this.seedableSlots().length * this.options.bytes;
  }

  async feed(bytes: Buffer): Promise<FeedOutcome> {
    const session = this.session;
    if (!session) throw new SinkError(`${this.name} is not open`, 'ECLOSED');
    const slots = this.seedableSlots();
    let accepted = 0;
    const failures: string[] = [];
    const refused: Array<{ slot: number | undefined; rv: string; detail: string | undefined }> = [];
    for (const [i, index] of slots.entries()) {
      const part = bytes.subarray(i * this.options.bytes, (i + 1) * this.options.bytes);
      if (part.length === 0) break;
      const result = await session.seed(index, part);
      if (result.ok) accepted += part.length;
      if (result.newlyUnsupported) refused.push({ slot: this.slotStates[index]?.slot, rv: result.rv, detail: result.message });
      else if (!result.ok && !result.skipped) failures.push(`${result.rv}${result.message ? `: ${result.message}` : ''}`);
    }
    this.slotStates = await session.slots();
    if (refused.length > 0 && this.seedableSlots().length === 0) {
      // Nothing left to seed: one plain error, and the feeder disables the sink (the
      // daemon and the other sinks go on). Many HSMs answer so: their generator takes no
      // outside input (docs/health-and-sinks.md).
      const rv = refused[0]!.rv;
      throw new SinkError(
        `${this.name}: the token does not accept seeds (C_SeedRandom answered ${rv}); it keeps using its own generator, and this sink is off until the config is reloaded`,
        rv,
        true,
      );
    }
    for (const r of refused) {
      this.notice(`${this.name}: token does not accept seeds; leaving it alone`, { sink: this.name, module: this.options.module, slot: r.slot, rv: r.rv, detail: r.detail });
    }
    if (failures.length > 0 && accepted === 0) {
      throw new SinkError(`${this.name}: C_SeedRandom failed (${failures.join('; ')})`, failures[0]!.split(':', 1)[0]!);
    }
    return { bytes: accepted };
  }

  async details(): Promise<Record<string, unknown>> {
    if (this.session) this.slotStates = await this.session.slots();
    return { module: this.options.module, tokenLabel: this.options.tokenLabel, mixOsRandom: this.options.mixOsRandom, slots: this.slotStates };
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    await session?.close();
  }

  private seedableSlots(): number[] {
    const out: number[] = [];
    this.slotStates.forEach((s, i) => {
      if (s.status === 'active' || s.status === 'reconnecting') out.push(i);
    });
    return out;
  }
}
