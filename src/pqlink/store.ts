// Ratchet state at rest: one row per link, the whole state sealed with the site key
// (AES-256-GCM, the link as associated data) like keys at rest, so the database never
// holds a chain secret in the clear and a row moved to another link fails to open.
import type { Db, Migration } from '../storage/db.js';

export const PQLINK_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE pqlink_state (
     site TEXT NOT NULL,
     peer TEXT NOT NULL,
     sealed {{BYTES}} NOT NULL,
     -- The highest epoch in the state (current or candidate), in the clear: a write never
     -- replaces a state with a newer epoch (two instances of a site on one database).
     epoch BIGINT NOT NULL,
     updated BIGINT NOT NULL,
     PRIMARY KEY (site, peer)
   );`,
];

/** Seals and opens state; the KME's SiteKey has this shape. */
export interface Sealer {
  seal(plain: Buffer, aad: Buffer): Buffer;
  open(sealed: Buffer, aad: Buffer): Buffer;
}

export interface EpochSecret {
  epoch: number;
  /** S(e), hex. */
  secret: string;
}

export interface RatchetState {
  current?: EpochSecret & { started: number; keys: number };
  /** The epoch before the current one, kept until deliveries of it are done. */
  previous?: EpochSecret & { eraseAt: number };
  /** Agreed in an exchange, not yet confirmed to both sites. */
  candidate?: EpochSecret;
}

export class RatchetStore {
  constructor(
    readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  migrate(): Promise<void> {
    return this.db.migrate('pqlink', PQLINK_MIGRATIONS);
  }

  private aad(site: string, peer: string): Buffer {
    return Buffer.from(`qentropy pqlink state v1\n${site}\n${peer}`, 'utf8');
  }

  /**
   * After a save that dropped an epoch secret: resolves once no older sealed state (which
   * held it) is left in the database's files (Db.scrub; docs/storage.md, "Erasure").
   */
  scrub(): Promise<void> {
    return this.db.scrub();
  }

  async load(site: string, peer: string): Promise<RatchetState> {
    const [row] = await this.db.query<{ sealed: Buffer }>('SELECT sealed FROM pqlink_state WHERE site = $1 AND peer = $2', [site, peer]);
    if (!row) return {};
    const plain = this.sealer.open(Buffer.from(row.sealed), this.aad(site, peer));
    try {
      return JSON.parse(plain.toString('utf8')) as RatchetState;
    } finally {
      plain.fill(0);
    }
  }

  /**
   * Writes the state unless the stored one has a newer epoch (then another instance of the
   * site moved on, and this one follows it at its next load). False when not written.
   */
  async save(site: string, peer: string, state: RatchetState): Promise<boolean> {
    const plain = Buffer.from(JSON.stringify(state), 'utf8');
    const sealed = this.sealer.seal(plain, this.aad(site, peer));
    plain.fill(0);
    const epoch = Math.max(state.current?.epoch ?? 0, state.candidate?.epoch ?? 0);
    const n = await this.db.execute(
      `INSERT INTO pqlink_state (site, peer, sealed, epoch, updated) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (site, peer) DO UPDATE SET sealed = excluded.sealed, epoch = excluded.epoch, updated = excluded.updated
       WHERE pqlink_state.epoch <= excluded.epoch`,
      [site, peer, sealed, epoch, Date.now()],
    );
    return n > 0;
  }
}
