// The KME's tables on the shared storage layer (namespace 'kme'). Every key row holds the
// key sealed with the site key; the metadata columns say which link it belongs to, who
// may still retrieve it and when it expires. The outbox holds notices to peers (cancel a
// delivery, "retrieved") that must survive a restart until the peer has them.
import type { Db, Migration, Queryable, SqlParam } from '../storage/db.js';

export const KME_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE kme_keys (
     key_id TEXT PRIMARY KEY,
     origin TEXT NOT NULL,
     peer TEXT NOT NULL,
     size INTEGER NOT NULL,
     owner TEXT NOT NULL,
     waiting TEXT NOT NULL,
     state INTEGER NOT NULL,
     created BIGINT NOT NULL,
     expires BIGINT NOT NULL,
     digest TEXT NOT NULL,
     key_enc {{BYTES}} NOT NULL
   );
   CREATE INDEX kme_keys_link ON kme_keys (origin, peer);
   CREATE INDEX kme_keys_expires ON kme_keys (expires);
   CREATE TABLE kme_tombstones (key_id TEXT PRIMARY KEY, expires BIGINT NOT NULL);
   CREATE TABLE kme_outbox (
     id {{AUTO_ID}},
     peer TEXT NOT NULL,
     kind TEXT NOT NULL,
     key_id TEXT NOT NULL,
     expires BIGINT NOT NULL
   );
   CREATE INDEX kme_outbox_peer ON kme_outbox (peer, id);`,
];

/**
 * Key states. At the peer a delivered key is ACTIVE (servable). At the origin a key is
 * PENDING until the peer has stored it, then ANSWERING while the enc_keys answer is being
 * written; the row is deleted once the answer has left (the origin never serves a key
 * again: ETSI §5.3). Origin rows left in either state by a crash are settled by
 * maintenance (KmeService.maintain). ACTIVE origin rows come only from older versions.
 */
export const PENDING = 0;
export const ACTIVE = 1;
export const ANSWERING = 2;

/**
 * `waiting` at the peer: '*' = any one SAE of the peer site may retrieve it once;
 * otherwise the comma-separated SAE IDs that have not yet retrieved it. At the origin (which
 * never serves its keys and holds their metadata only while answering) it lists the further
 * sites of a multicast key, '' for a key of one link.
 */
export const ANY_SAE = '*';

export interface KeyRow {
  key_id: string;
  origin: string;
  peer: string;
  size: number;
  owner: string;
  waiting: string;
  state: number;
  created: number;
  expires: number;
  digest: string;
  key_enc: Buffer;
}

export type OutboxKind = 'cancel' | 'retrieved' | 'orphaned';

export interface OutboxEntry {
  id: number;
  kind: OutboxKind;
  key_id: string;
}

const CHUNK = 400;

function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

// Statement texts by their shape (how many placeholders, from where), each made once and
// then the same string object: building a 128-row INSERT's 1,408 placeholders per delivery
// showed in the sites' profiles, and so did hashing each fresh 10 KB text again for the
// placeholder-translation and prepared-statement caches. Counts are bounded by CHUNK.
const texts = new Map<string, string>();

function memoText(shape: string, build: () => string): string {
  let text = texts.get(shape);
  if (text === undefined) {
    text = build();
    texts.set(shape, text);
  }
  return text;
}

function placeholders(count: number, offset = 0): string {
  return memoText(`${count}@${offset}`, () => Array.from({ length: count }, (_, i) => `$${i + 1 + offset}`).join(', '));
}

const KEY_COLUMNS = ['key_id', 'origin', 'peer', 'size', 'owner', 'waiting', 'state', 'created', 'expires', 'digest', 'key_enc'] as const;

function keyValues(row: KeyRow): SqlParam[] {
  return [row.key_id, row.origin, row.peer, row.size, row.owner, row.waiting, row.state, row.created, row.expires, row.digest, row.key_enc];
}

export class KeyStore {
  constructor(readonly db: Db) {}

  migrate(): Promise<void> {
    return this.db.migrate('kme', KME_MIGRATIONS);
  }

  /** Inserts rows, skipping IDs already present; returns how many were new. */
  async insertKeys(q: Queryable, rows: readonly KeyRow[]): Promise<number> {
    let inserted = 0;
    const width = KEY_COLUMNS.length;
    for (const part of chunks(rows, Math.floor(CHUNK / 2))) {
      const sql = memoText(`insert ${part.length}`, () => {
        const values = part.map((_, r) => `(${placeholders(width, r * width)})`).join(', ');
        return `INSERT INTO kme_keys (${KEY_COLUMNS.join(', ')}) VALUES ${values} ON CONFLICT (key_id) DO NOTHING`;
      });
      inserted += await q.execute(sql, part.flatMap(keyValues));
    }
    return inserted;
  }

  async setState(q: Queryable, ids: readonly string[], state: number): Promise<number> {
    let n = 0;
    for (const part of chunks(ids)) {
      n += await q.execute(`UPDATE kme_keys SET state = $1 WHERE key_id IN (${placeholders(part.length, 1)})`, [state, ...part]);
    }
    return n;
  }

  async deleteKeys(q: Queryable, ids: readonly string[], extraWhere = '', extraParams: SqlParam[] = []): Promise<number> {
    let n = 0;
    for (const part of chunks(ids)) {
      const offset = extraParams.length;
      n += await q.execute(
        `DELETE FROM kme_keys WHERE key_id IN (${placeholders(part.length, offset)})${extraWhere}`,
        [...extraParams, ...part],
      );
    }
    return n;
  }

  async getKeys(q: Queryable, ids: readonly string[]): Promise<KeyRow[]> {
    const out: KeyRow[] = [];
    for (const part of chunks(ids)) {
      out.push(...(await q.query<KeyRow>(`SELECT * FROM kme_keys WHERE key_id IN (${placeholders(part.length)})`, part)));
    }
    return out;
  }

  async digests(q: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const part of chunks(ids)) {
      const rows = await q.query<{ key_id: string; digest: string }>(
        `SELECT key_id, digest FROM kme_keys WHERE key_id IN (${placeholders(part.length)})`,
        part,
      );
      for (const r of rows) out.set(r.key_id, r.digest);
    }
    return out;
  }

  async tombstoned(q: Queryable, ids: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (const part of chunks(ids)) {
      const rows = await q.query<{ key_id: string }>(`SELECT key_id FROM kme_tombstones WHERE key_id IN (${placeholders(part.length)})`, part);
      out.push(...rows.map((r) => r.key_id));
    }
    return out;
  }

  async addTombstones(q: Queryable, ids: readonly string[], expires: number): Promise<void> {
    for (const part of chunks(ids, Math.floor(CHUNK / 2))) {
      const values = part.map((_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ');
      await q.execute(
        `INSERT INTO kme_tombstones (key_id, expires) VALUES ${values} ON CONFLICT (key_id) DO NOTHING`,
        part.flatMap((id) => [id, expires]),
      );
    }
  }

  /**
   * After sealed keys were deleted (retrieved, cancelled, expired): resolves once no copy of
   * them is left in the database's files either (Db.scrub; docs/storage.md, "Erasure").
   */
  scrub(): Promise<void> {
    return this.db.scrub();
  }

  /** Keys stored here for the link between two sites, in either direction. */
  async countLink(a: string, b: string): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM kme_keys WHERE (origin = $1 AND peer = $2) OR (origin = $2 AND peer = $1)',
      [a, b],
    );
    return Number(row?.n ?? 0);
  }

  /** Keys held here that `owner` (a master SAE of site `origin`) made and that still wait for their slaves. */
  async countOwner(origin: string, peer: string, owner: string): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM kme_keys WHERE origin = $1 AND peer = $2 AND owner = $3', [
      origin,
      peer,
      owner,
    ]);
    return Number(row?.n ?? 0);
  }

  async countAll(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM kme_keys');
    return Number(row?.n ?? 0);
  }

  async enqueue(q: Queryable, peer: string, kind: OutboxKind, ids: readonly string[], expires: number): Promise<void> {
    for (const part of chunks(ids, Math.floor(CHUNK / 4))) {
      const values = part.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`).join(', ');
      await q.execute(
        `INSERT INTO kme_outbox (peer, kind, key_id, expires) VALUES ${values}`,
        part.flatMap((id) => [peer, kind, id, expires]),
      );
    }
  }

  async outbox(peer: string, limit: number): Promise<OutboxEntry[]> {
    return this.db.query<OutboxEntry>('SELECT id, kind, key_id FROM kme_outbox WHERE peer = $1 ORDER BY id LIMIT $2', [peer, limit]);
  }

  async outboxPeers(): Promise<string[]> {
    const rows = await this.db.query<{ peer: string }>('SELECT DISTINCT peer FROM kme_outbox');
    return rows.map((r) => r.peer);
  }

  async deleteOutbox(ids: readonly number[]): Promise<void> {
    for (const part of chunks(ids)) {
      await this.db.execute(`DELETE FROM kme_outbox WHERE id IN (${placeholders(part.length)})`, part);
    }
  }

  /**
   * Keys this site originated, made before `before`, still PENDING (a delivery that never
   * finished) or ANSWERING (an answer whose fate is unknown): what a crash left behind.
   */
  async unsettled(origin: string, before: number): Promise<Array<{ key_id: string; peer: string; waiting: string; state: number }>> {
    return this.db.query('SELECT key_id, peer, waiting, state FROM kme_keys WHERE origin = $1 AND state IN ($2, $3) AND created < $4', [
      origin,
      PENDING,
      ANSWERING,
      before,
    ]);
  }

  /** Shortens the life of keys held here to `expires` at most; returns how many were held. */
  async shortenLife(q: Queryable, ids: readonly string[], expires: number, origin: string, peer: string): Promise<number> {
    let n = 0;
    for (const part of chunks(ids)) {
      n += await q.execute(
        `UPDATE kme_keys SET expires = CASE WHEN expires < $1 THEN expires ELSE $1 END
          WHERE origin = $2 AND peer = $3 AND key_id IN (${placeholders(part.length, 3)})`,
        [expires, origin, peer, ...part],
      );
    }
    return n;
  }

  /** Drops expired keys, tombstones and undeliverable notices; returns the keys dropped. */
  async sweepExpired(now: number): Promise<number> {
    const keys = await this.db.execute('DELETE FROM kme_keys WHERE expires <= $1', [now]);
    await this.db.execute('DELETE FROM kme_tombstones WHERE expires <= $1', [now]);
    await this.db.execute('DELETE FROM kme_outbox WHERE expires <= $1', [now]);
    return keys;
  }
}
