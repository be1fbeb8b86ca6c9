// The PKCS#11 sink: seeds HSM random generators with C_SeedRandom on every slot whose
// token has the configured label. Every call into the module runs off the event loop.
// See docs/health-and-sinks.md for what each module answer leads to.
import { addon } from './addon.js';

export interface Pkcs11TokenInfo {
  slot: number;
  label: string;
  manufacturer: string;
  model: string;
  serial: string;
  hasRng: boolean;
  loginRequired: boolean;
}

export interface Pkcs11SinkOptions {
  /** Path of the module (e.g. /usr/lib/softhsm/libsofthsm2.so). */
  modulePath: string;
  /** Token label (at most 32 bytes; compared without its blank padding). */
  tokenLabel: string;
  /** User PIN, read by the caller from a file; never log it. */
  pin?: string;
  /** XOR each seed with local OS randomness (getrandom) before it goes to the token. */
  mixOsRandom?: boolean;
}

export type Pkcs11SlotStatus = 'active' | 'reconnecting' | 'unsupported' | 'login-refused';

export interface Pkcs11SlotState {
  slot: number;
  label: string;
  status: Pkcs11SlotStatus;
  /** C_SeedRandom calls that returned CKR_OK. */
  seedCalls: number;
  bytesSeeded: number;
  errors: number;
  lastRv: string;
  lastError?: string;
}

export interface Pkcs11SeedResult {
  ok: boolean;
  /** The slot is left alone (it does not accept seeds, or refused the PIN): nothing was sent. */
  skipped: boolean;
  /** This call found out the token does not accept seeds: report it (this is the only time). */
  newlyUnsupported: boolean;
  /** CKR_* name of the module's answer. */
  rv: string;
  message?: string;
}

/** A rejected call: `code` is a CKR_* name, or 'MODULE_LOAD', 'NO_TOKEN', 'INVALID', 'ERROR'. */
export interface Pkcs11Error extends Error {
  code: string;
}

/** Tokens present in a module's slots (loads and initializes the module). */
export async function listTokens(modulePath: string): Promise<Pkcs11TokenInfo[]> {
  return (await addon.pkcs11ListTokens(modulePath)) as Pkcs11TokenInfo[];
}

export class Pkcs11Sink {
  readonly #handle: unknown;
  readonly modulePath: string;
  readonly tokenLabel: string;

  private constructor(handle: unknown, options: Pkcs11SinkOptions) {
    this.#handle = handle;
    this.modulePath = options.modulePath;
    this.tokenLabel = options.tokenLabel;
  }

  /**
   * Loads the module, finds the slots whose token has the label, opens a session on each
   * and logs in when a PIN is given. Rejects with a Pkcs11Error: 'NO_TOKEN' (the message
   * lists the labels present), 'MODULE_LOAD', or the CKR_* name (e.g. CKR_PIN_INCORRECT).
   */
  static async open(options: Pkcs11SinkOptions): Promise<Pkcs11Sink> {
    const handle = await addon.pkcs11Open(options);
    return new Pkcs11Sink(handle, options);
  }

  /**
   * C_SeedRandom on one slot (index into {@link slots}). Resolves for every module
   * answer; `ok` says whether it was accepted.
   */
  async seed(slotIndex: number, bytes: Uint8Array): Promise<Pkcs11SeedResult> {
    return (await addon.pkcs11Seed(this.#handle, slotIndex, bytes)) as Pkcs11SeedResult;
  }

  /** C_GenerateRandom on one slot: proves the session is live. */
  async generate(slotIndex: number, size: number): Promise<Buffer> {
    return (await addon.pkcs11Generate(this.#handle, slotIndex, size)) as Buffer;
  }

  /** Per-slot counters and state, for metrics and `feeder status`. */
  async slots(): Promise<Pkcs11SlotState[]> {
    return (await addon.pkcs11Slots(this.#handle)) as Pkcs11SlotState[];
  }

  /** Closes the sessions. The module is finalized once nothing in the process uses it. */
  async close(): Promise<void> {
    await addon.pkcs11Close(this.#handle);
  }
}
