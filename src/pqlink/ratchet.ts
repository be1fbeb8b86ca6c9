// One link's ML-KEM-768 ratchet (docs/post-quantum.md, "Inter-site ratchet"). The site
// with the smaller KME ID leads: it starts every exchange. An epoch change is two calls:
//
//   offer  (leader → follower): {suite, epoch: n, prev: e, ek}   follower: encapsulate,
//          S(n) = next(S(e), ss), keep S(n) as candidate (sealed at rest), answer {ct}
//   commit (leader → follower): {suite, epoch: n, confirm}       leader: decapsulate, same
//          S(n), keep as candidate; follower checks the key confirmation and makes n current
//
// The leader makes n current once the commit is answered (or when the follower's first
// delivery of epoch n proves it did). Keys of the old epoch may still be in flight, so its
// secret is kept for a grace period and then erased, here and at rest. The decapsulation
// key lives only in memory for one exchange. Anything the two sites disagree on (suite,
// epoch) is refused with 503 and a log line; a chain neither side can continue (one
// site's state lost) is restarted from a fresh exchange, logged.
import { randomUUID } from 'node:crypto';

import { confirmation, confirmationMatches, keySecret, linkLabel, nextChainSecret, ratchetSuite } from './chain.js';
import { mlKem768, type MlKem768 } from './mlkem.js';
import type { RatchetState, RatchetStore } from './store.js';

export interface RatchetLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** A refusal with the HTTP status the caller gets (503: not now / mismatch; 409: the exchange cannot go on). */
export class RatchetError extends Error {
  constructor(
    readonly status: 409 | 503,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RatchetError';
  }
}

/** Calls the peer's ratchet endpoints; rejects with an error carrying `status` when it answered non-200. */
export type RatchetCall = (path: string, body: unknown) => Promise<unknown>;

export interface LinkRatchetOptions {
  site: string;
  peer: string;
  psk?: Buffer;
  pskFingerprint?: string;
  store: RatchetStore;
  call: RatchetCall;
  log: RatchetLog;
  /** Epoch length by time and by keys (whichever comes first). */
  epochMs: number;
  epochKeys: number;
  /** How long the previous epoch's secret stays for deliveries still in flight. */
  graceMs: number;
  mlkem?: MlKem768;
  now?: () => number;
}

interface Epoch {
  epoch: number;
  chain: Buffer;
  key: Buffer;
}

export const OFFER_PATH = '/internal/v1/pqlink/offer';
export const COMMIT_PATH = '/internal/v1/pqlink/commit';
export const NUDGE_PATH = '/internal/v1/pqlink/nudge';

export class LinkRatchet {
  readonly suite: string;
  readonly leader: boolean;
  private readonly link: Buffer;
  private readonly mlkem: MlKem768;
  private readonly now: () => number;
  private current: (Epoch & { started: number; keys: number }) | undefined;
  private previous: (Epoch & { eraseAt: number }) | undefined;
  private candidate: Epoch | undefined;
  private advancing: Promise<void> | undefined;
  private lastFailure: string | undefined;
  private saving: Promise<void> = Promise.resolve();
  private loading: Promise<void> | undefined;
  /** The key count last written, so maintenance saves it only when it moved. */
  private savedKeys = 0;
  /** An epoch secret was erased in memory since the last save: that save scrubs the database files. */
  private erasedSinceSave = false;

  constructor(private readonly opts: LinkRatchetOptions) {
    this.suite = ratchetSuite(opts.pskFingerprint);
    this.leader = opts.site < opts.peer;
    this.link = linkLabel(opts.site, opts.peer);
    this.mlkem = opts.mlkem ?? mlKem768();
    this.now = opts.now ?? Date.now;
  }

  private epoch(epoch: number, chain: Buffer): Epoch {
    return { epoch, chain, key: keySecret(chain, epoch, this.link) };
  }

  // ---- state at rest ------------------------------------------------------------------

  /**
   * Reads the sealed state (after a restart, or when another instance of the site on the
   * same database moved the chain on). Never goes back to an older epoch; concurrent
   * callers share one read.
   */
  load(): Promise<void> {
    this.loading ??= this.read().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async read(): Promise<void> {
    await this.saving.catch(() => undefined);
    const s = await this.opts.store.load(this.opts.site, this.opts.peer);
    if ((s.current?.epoch ?? 0) < (this.current?.epoch ?? 0)) return;
    if (s.current?.epoch === this.current?.epoch && (s.candidate?.epoch ?? 0) <= (this.candidate?.epoch ?? 0) && !!s.previous === !!this.previous) return;
    // Callers hold copies of the secrets (see forSending), so the old buffers can be wiped.
    this.erase(this.current, this.previous, this.candidate);
    this.current = s.current ? { ...this.epoch(s.current.epoch, Buffer.from(s.current.secret, 'hex')), started: s.current.started, keys: s.current.keys } : undefined;
    this.previous = s.previous ? { ...this.epoch(s.previous.epoch, Buffer.from(s.previous.secret, 'hex')), eraseAt: s.previous.eraseAt } : undefined;
    this.candidate = s.candidate ? this.epoch(s.candidate.epoch, Buffer.from(s.candidate.secret, 'hex')) : undefined;
  }

  private save(): Promise<void> {
    const state: RatchetState = {
      ...(this.current ? { current: { epoch: this.current.epoch, secret: this.current.chain.toString('hex'), started: this.current.started, keys: this.current.keys } } : {}),
      ...(this.previous ? { previous: { epoch: this.previous.epoch, secret: this.previous.chain.toString('hex'), eraseAt: this.previous.eraseAt } } : {}),
      ...(this.candidate ? { candidate: { epoch: this.candidate.epoch, secret: this.candidate.chain.toString('hex') } } : {}),
    };
    this.savedKeys = this.current?.keys ?? 0;
    const scrub = this.erasedSinceSave;
    this.erasedSinceSave = false;
    // Saves run one after another, so an older state never overwrites a newer one.
    this.saving = this.saving
      .catch(() => undefined)
      .then(async () => {
        if (!(await this.opts.store.save(this.opts.site, this.opts.peer, state))) {
          this.opts.log.debug({ peer: this.opts.peer }, 'pqlink: another instance of this site holds a newer epoch; following it');
        }
        // Earlier states, which held the erased secret, are still in the database's files
        // (the WAL) until scrubbed. A failed scrub does not fail the save: the next
        // maintenance pass saves and scrubs again.
        if (scrub) {
          await this.opts.store.scrub().catch((err: Error) => {
            this.erasedSinceSave = true;
            this.opts.log.warn({ peer: this.opts.peer, reason: err.message }, 'pqlink: an erased epoch secret may stay in the database files until the next maintenance pass');
          });
        }
      });
    return this.saving;
  }

  private erase(...epochs: Array<Epoch | undefined>): void {
    for (const e of epochs) {
      if (!e) continue;
      e.chain.fill(0);
      e.key.fill(0);
      this.erasedSinceSave = true;
    }
  }

  // ---- what the KME asks --------------------------------------------------------------

  /** Suite, epoch and key secret for `keys` new keys; establishes the chain first if there is none. */
  async forSending(keys: number): Promise<{ suite: string; epoch: number; secret: Buffer }> {
    if (!this.current) await this.establish();
    const current = this.current;
    if (!current) throw new RatchetError(503, `the post-quantum ratchet of the link to '${this.opts.peer}' is not established${this.lastFailure ? `: ${this.lastFailure}` : ''}`);
    current.keys += keys;
    if (this.due()) this.kick();
    // A copy: the ratchet wipes its own buffers when an epoch ends, while this request may still derive.
    return { suite: this.suite, epoch: current.epoch, secret: Buffer.from(current.key) };
  }

  /** The key secret for delivered keys of `epoch`; a suite or epoch this site cannot serve is refused. */
  async forReceiving(suite: unknown, epoch: unknown, keys: number): Promise<{ suite: string; epoch: number; secret: Buffer }> {
    if (suite !== this.suite) {
      this.opts.log.warn({ peer: this.opts.peer, suite: String(suite), expected: this.suite }, 'pqlink: delivery refused: suite differs (ratchet on at one site only, or a different PSK)');
      throw new RatchetError(503, `suite '${String(suite)}' differs from this site's '${this.suite}' for the link (is the ratchet on, and the PSK the same, at both sites?)`);
    }
    let found = this.lookup(epoch);
    if (!found && typeof epoch === 'number') {
      // Another instance of this site may have moved the chain on: read it again once.
      await this.load();
      found = this.lookup(epoch);
    }
    if (!found) {
      this.opts.log.warn({ peer: this.opts.peer, epoch, current: this.current?.epoch ?? null }, 'pqlink: delivery refused: epoch mismatch');
      throw new RatchetError(503, `ratchet epoch ${String(epoch)} is not usable at this site (current ${this.current?.epoch ?? 'none'}); the sites will re-key`);
    }
    if (found === this.current) this.current.keys += keys;
    if (this.due()) this.kick();
    return { suite: this.suite, epoch: found.epoch, secret: Buffer.from(found.key) };
  }

  private lookup(epoch: unknown): Epoch | undefined {
    if (this.current?.epoch === epoch) return this.current;
    if (this.previous?.epoch === epoch) return this.previous;
    if (this.candidate?.epoch === epoch && this.leader) {
      // The follower only uses an epoch after checking our confirmation: it committed.
      this.promote();
      void this.save().catch((err: Error) => this.opts.log.error({ peer: this.opts.peer, err: err.message }, 'pqlink: saving ratchet state failed'));
      return this.current;
    }
    return undefined;
  }

  /** After a refused delivery: follow another instance of this site now, unless an exchange runs. */
  async resync(): Promise<void> {
    if (!this.advancing) await this.load();
  }

  status(): Record<string, unknown> {
    return {
      suite: this.suite,
      role: this.leader ? 'leader' : 'follower',
      epoch: this.current?.epoch ?? null,
      epoch_started: this.current ? new Date(this.current.started).toISOString() : null,
      keys_in_epoch: this.current?.keys ?? 0,
      mlkem: this.mlkem.name,
      ...(this.lastFailure ? { last_failure: this.lastFailure } : {}),
    };
  }

  // ---- epochs -------------------------------------------------------------------------

  private due(): boolean {
    const c = this.current;
    return !c || this.now() - c.started >= this.opts.epochMs || c.keys >= this.opts.epochKeys;
  }

  /** Starts an epoch change in the background (leader) or asks the leader for one (follower). */
  private kick(): void {
    if (this.advancing) return;
    void this.establishOrAdvance().catch(() => undefined);
  }

  private async establish(): Promise<void> {
    await this.establishOrAdvance();
  }

  private establishOrAdvance(): Promise<void> {
    this.advancing ??= (this.leader ? this.advance() : this.nudge())
      .then(
        () => {
          this.lastFailure = undefined;
        },
        (err: Error) => {
          this.lastFailure = err.message;
          this.opts.log.warn({ peer: this.opts.peer, reason: err.message }, 'pqlink: re-key failed; retrying at the next maintenance pass');
        },
      )
      .finally(() => {
        this.advancing = undefined;
      });
    return this.advancing;
  }

  /** Follower: ask the leader to run an exchange now (it answers once it is done). */
  private async nudge(restart = false): Promise<void> {
    await this.opts.call(NUDGE_PATH, { suite: this.suite, epoch: this.current?.epoch ?? 0, ...(restart ? { restart: true } : {}) });
  }

  /**
   * At start: re-key now, so a site that was down (and its peer) move to a fresh epoch.
   * In the background; a peer that is down is tried again by maintenance.
   */
  start(): void {
    if (this.leader) this.kick();
    else if (!this.advancing) {
      this.advancing = this.nudge(true)
        .catch((err: Error) => {
          this.lastFailure = err.message;
          this.opts.log.warn({ peer: this.opts.peer, reason: err.message }, 'pqlink: re-key at start failed; the leader retries');
        })
        .finally(() => {
          this.advancing = undefined;
        });
    }
  }

  /** Leader: one exchange and commit, moving the link to a new epoch. */
  private async advance(): Promise<void> {
    if (this.candidate) {
      // An exchange whose commit went unanswered: finish it, or start afresh if refused.
      try {
        await this.commit(this.candidate);
        return;
      } catch (err) {
        if ((err as { status?: number }).status !== 409) throw err;
        this.erase(this.candidate);
        this.candidate = undefined;
      }
    }
    let base = this.current;
    let epoch = (base?.epoch ?? 0) + 1;
    let answer: { ciphertext?: unknown };
    let keys = this.mlkem.generate();
    try {
      answer = (await this.opts.call(OFFER_PATH, { suite: this.suite, epoch, prev: base?.epoch ?? 0, ek: keys.encapsulationKey.toString('base64') })) as { ciphertext?: unknown };
    } catch (err) {
      const e = err as { status?: number; details?: { epoch?: unknown } };
      if (e.status !== 409) throw err;
      // The follower cannot continue our chain (its state was lost or differs): start a
      // new chain from a fresh exchange alone, at an epoch number neither side has used.
      const theirs = typeof e.details?.epoch === 'number' ? e.details.epoch : 0;
      this.opts.log.warn({ peer: this.opts.peer, ours: base?.epoch ?? null, theirs }, 'pqlink: the sites hold different chains; starting a new chain');
      base = undefined;
      epoch = Math.max(epoch, theirs + 1);
      keys = this.mlkem.generate();
      answer = (await this.opts.call(OFFER_PATH, { suite: this.suite, epoch, prev: 0, ek: keys.encapsulationKey.toString('base64') })) as { ciphertext?: unknown };
    }
    if (typeof answer.ciphertext !== 'string') throw new RatchetError(503, 'the peer answered the ratchet offer without a ciphertext');
    const ss = keys.decapsulate(Buffer.from(answer.ciphertext, 'base64'));
    const chain = nextChainSecret(base?.chain, ss, this.opts.psk, epoch, this.link);
    ss.fill(0);
    this.candidate = this.epoch(epoch, chain);
    await this.save();
    await this.commit(this.candidate);
  }

  private async commit(candidate: Epoch): Promise<void> {
    await this.opts.call(COMMIT_PATH, { suite: this.suite, epoch: candidate.epoch, confirm: confirmation(candidate.chain, candidate.epoch, this.link) });
    if (this.candidate === candidate) {
      this.promote();
      await this.save();
    }
  }

  /** The candidate becomes current; the old current stays for `graceMs`, an older one goes now. */
  private promote(): void {
    const next = this.candidate!;
    this.candidate = undefined;
    this.erase(this.previous);
    this.previous = this.current ? { ...this.current, eraseAt: this.now() + this.opts.graceMs } : undefined;
    this.current = { ...next, started: this.now(), keys: 0 };
    this.opts.log.info({ peer: this.opts.peer, epoch: next.epoch, id: randomUUID().slice(0, 8) }, 'pqlink: new ratchet epoch');
  }

  // ---- the follower's side of an exchange ---------------------------------------------

  async onOffer(body: unknown): Promise<{ ciphertext: string }> {
    const b = body as { suite?: unknown; epoch?: unknown; prev?: unknown; ek?: unknown } | null;
    this.checkSuite(b?.suite);
    if (this.leader) throw new RatchetError(409, `this site leads the ratchet of the link to '${this.opts.peer}'`);
    const epoch = b?.epoch;
    const prev = b?.prev;
    if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 1 || typeof prev !== 'number' || typeof b?.ek !== 'string') {
      throw new RatchetError(409, 'a ratchet offer needs suite, epoch, prev and ek');
    }
    // Another instance of this site (same database) may have moved on: read the state once.
    if (prev !== 0 && prev !== (this.current?.epoch ?? 0)) await this.load();
    const ours = this.current?.epoch ?? 0;
    if (prev !== 0 && prev !== ours) {
      this.opts.log.warn({ peer: this.opts.peer, theirs: prev, ours }, 'pqlink: ratchet offer refused: epoch mismatch');
      throw new RatchetError(409, `this site is at ratchet epoch ${ours}, not ${prev}`, { epoch: ours });
    }
    // Epoch numbers only grow, even across a new chain: state at rest relies on it.
    if (epoch <= ours) throw new RatchetError(409, `epoch ${epoch} is not after this site's ${ours}`, { epoch: ours });
    const base = prev === 0 ? undefined : this.current;
    const { ciphertext, sharedSecret } = this.mlkem.encapsulate(Buffer.from(b.ek, 'base64'));
    const chain = nextChainSecret(base?.chain, sharedSecret, this.opts.psk, epoch, this.link);
    sharedSecret.fill(0);
    this.erase(this.candidate);
    this.candidate = this.epoch(epoch, chain);
    await this.save();
    return { ciphertext: ciphertext.toString('base64') };
  }

  async onCommit(body: unknown): Promise<{ epoch: number }> {
    const b = body as { suite?: unknown; epoch?: unknown; confirm?: unknown } | null;
    this.checkSuite(b?.suite);
    if (this.current?.epoch === b?.epoch && confirmationMatches(this.current!.chain, this.current!.epoch, this.link, b?.confirm)) {
      return { epoch: this.current!.epoch }; // a repeated commit
    }
    // The offer may have reached another instance of this site: its candidate is in the database.
    if (this.candidate?.epoch !== b?.epoch) await this.load();
    if (this.current?.epoch === b?.epoch && confirmationMatches(this.current!.chain, this.current!.epoch, this.link, b?.confirm)) {
      return { epoch: this.current!.epoch };
    }
    const c = this.candidate;
    if (!c || c.epoch !== b?.epoch || !confirmationMatches(c.chain, c.epoch, this.link, b?.confirm)) {
      this.opts.log.warn({ peer: this.opts.peer, epoch: b?.epoch ?? null }, 'pqlink: ratchet commit refused: the sites derived different chain secrets or epochs');
      throw new RatchetError(409, 'the key confirmation does not match this site\'s candidate epoch', { epoch: this.current?.epoch ?? 0 });
    }
    this.promote();
    await this.save();
    return { epoch: c.epoch };
  }

  /** Leader: the follower asks for an exchange (it has no epoch yet, or one that is due). */
  async onNudge(body: unknown): Promise<{ epoch: number }> {
    const b = body as { suite?: unknown; epoch?: unknown; restart?: unknown } | null;
    this.checkSuite(b?.suite);
    if (!this.leader) throw new RatchetError(409, `'${this.opts.peer}' leads the ratchet of this link`);
    if (!this.current || b?.restart === true || b?.epoch !== this.current.epoch || this.due()) await this.establishOrAdvance();
    if (!this.current) throw new RatchetError(503, `re-key with '${this.opts.peer}' failed: ${this.lastFailure ?? 'unknown reason'}`);
    return { epoch: this.current.epoch };
  }

  private checkSuite(suite: unknown): void {
    if (suite === this.suite) return;
    this.opts.log.warn({ peer: this.opts.peer, suite: String(suite), expected: this.suite }, 'pqlink: ratchet call refused: suite differs');
    throw new RatchetError(409, `suite '${String(suite)}' differs from this site's '${this.suite}' (is the PSK the same at both sites?)`, { epoch: this.current?.epoch ?? 0 });
  }

  // ---- maintenance --------------------------------------------------------------------

  /** Erases the previous epoch once its grace has passed; re-keys when due (after a peer was down, too). */
  async maintain(): Promise<void> {
    if (!this.advancing) {
      // Another instance of this site may have re-keyed: follow it before erasing or saving anything.
      await this.load();
      // (Also when a scrub after an erasure failed: this save scrubs again.)
      if (this.current && (this.current.keys !== this.savedKeys || this.erasedSinceSave)) await this.save();
    }
    if (this.previous && this.now() >= this.previous.eraseAt) {
      const epoch = this.previous.epoch;
      this.erase(this.previous);
      this.previous = undefined;
      await this.save();
      this.opts.log.debug({ peer: this.opts.peer, epoch }, 'pqlink: previous epoch erased');
    }
    if (this.leader && (this.due() || this.candidate)) await this.establishOrAdvance();
  }

  /** Lets a running exchange and save finish, then drops every secret from memory (the site is stopping). */
  async close(): Promise<void> {
    await this.advancing?.catch(() => undefined);
    await this.saving.catch(() => undefined);
    this.erase(this.current, this.previous, this.candidate);
    this.current = this.previous = this.candidate = undefined;
  }
}
