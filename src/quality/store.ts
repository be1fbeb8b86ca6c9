// Quality run records in the shared storage (namespace 'quality'): one row per run
// (completed or error), its full report as JSON text, and for loosely failing runs (and
// passing runs when configured) the first 5,242,880 bits of the tested data in a table
// of its own, read back in slices so a response never holds a whole run's bits.
import type { Db, Queryable } from '../storage/db.js';
import type { RunMinEntropy } from './min-entropy.js';
import type { TestResultRecord } from './record.js';
import { buildRecordFromRow, type RecordColumns } from './rows.js';

/** Bits of tested data kept for a failing run (product.md §5.3; the APIs' randsize maximum). */
export const KEPT_BITS = 5_242_880;

export const QUALITY_MIGRATIONS = [
  `CREATE TABLE quality_runs (
     id {{AUTO_ID}},
     status TEXT NOT NULL,
     started_ms BIGINT NOT NULL,
     completed_ms BIGINT NOT NULL,
     source TEXT NOT NULL,
     streams BIGINT NOT NULL,
     bits_per_stream BIGINT NOT NULL,
     tests_passed INTEGER NOT NULL DEFAULT 0,
     nist_all_passed INTEGER NOT NULL DEFAULT 0,
     nist_fails BIGINT NOT NULL DEFAULT 0,
     nist_passes BIGINT NOT NULL DEFAULT 0,
     nist_success_rate DOUBLE PRECISION,
     uniformity_all_passed INTEGER NOT NULL DEFAULT 0,
     uniformity_fails INTEGER NOT NULL DEFAULT 0,
     uniformity_passes INTEGER NOT NULL DEFAULT 0,
     uniformity_success_rate DOUBLE PRECISION,
     strictly_failing INTEGER NOT NULL DEFAULT 0,
     loosely_failing INTEGER NOT NULL DEFAULT 0,
     repetition_flagged INTEGER NOT NULL DEFAULT 0,
     error TEXT,
     report TEXT NOT NULL,
     data_bits BIGINT NOT NULL DEFAULT 0,
     data_expires_ms BIGINT
   );
   CREATE INDEX quality_runs_status_time ON quality_runs (status, completed_ms);
   CREATE INDEX quality_runs_loose_time ON quality_runs (loosely_failing, completed_ms);
   CREATE INDEX quality_runs_strict_time ON quality_runs (strictly_failing, completed_ms);
   CREATE TABLE quality_run_data (
     run_id BIGINT PRIMARY KEY,
     data {{BYTES}} NOT NULL
   );`,
  // SP 800-90B min-entropy of each completed run (src/quality/min-entropy.ts); NULL for error
  // runs and runs stored before it existed.
  `ALTER TABLE quality_runs ADD COLUMN min_entropy DOUBLE PRECISION;
   ALTER TABLE quality_runs ADD COLUMN min_entropy_original DOUBLE PRECISION;
   ALTER TABLE quality_runs ADD COLUMN min_entropy_bitstring DOUBLE PRECISION;`,
];

/** The storage could not be reached or failed: the APIs answer 503. */
export class StorageUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`storage unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StorageUnavailableError';
  }
}

export type RunStatus = 'completed' | 'error';

/** What a run produced, ready to be stored in one transaction. */
export interface NewRun {
  status: RunStatus;
  startedMs: number;
  completedMs: number;
  source: string;
  streams: number;
  bitsPerStream: number;
  /** Present for completed runs. */
  record?: TestResultRecord;
  strictlyFailing?: boolean;
  looselyFailing?: boolean;
  repetitionFlagged?: boolean;
  error?: string;
  /** The full per-run report (stored as JSON text). */
  report: object;
  /** Tested bits to keep (at most KEPT_BITS of them), or undefined. */
  data?: { bytes: Uint8Array; bits: number; expiresMs: number | null };
  /** SP 800-90B assessment of the run's bytes (completed runs). */
  minEntropy?: RunMinEntropy | null;
}

/** A quality_runs row: the record's columns (rows.ts) plus the run's bookkeeping. */
export interface StoredRunRow extends RecordColumns {
  id: number;
  status: RunStatus;
  started_ms: number;
  source: string;
  streams: number;
  bits_per_stream: number;
  strictly_failing: number;
  loosely_failing: number;
  repetition_flagged: number;
  error: string | null;
  data_bits: number;
  min_entropy: number | null;
  min_entropy_original: number | null;
  min_entropy_bitstring: number | null;
}

/** A listed run: its published record, id and how many tested bits are kept. */
export interface ListedRun {
  id: number;
  completedMs: number;
  record: TestResultRecord;
  dataBits: number;
}

export interface RunSummary {
  id: number;
  status: RunStatus;
  completedMs: number;
  testsPassed: boolean | null;
  strictlyFailing: boolean;
  looselyFailing: boolean;
  error: string | null;
  minEntropy: { h_original: number; h_bitstring: number; assessed: number } | null;
}

function toRunRow(row: StoredRunRow): RunRow {
  return {
    id: Number(row.id),
    status: row.status,
    completedMs: Number(row.completed_ms),
    record: row.status === 'completed' ? buildRecordFromRow(row) : null,
    strictlyFailing: Boolean(Number(row.strictly_failing)),
    looselyFailing: Boolean(Number(row.loosely_failing)),
    repetitionFlagged: Boolean(Number(row.repetition_flagged)),
    error: row.error,
    dataBits: Number(row.data_bits),
  };
}

const LIST_COLUMNS = `id, status, started_ms, completed_ms, source, streams, bits_per_stream, tests_passed,
  nist_all_passed, nist_fails, nist_passes, nist_success_rate, uniformity_all_passed, uniformity_fails,
  uniformity_passes, uniformity_success_rate, strictly_failing, loosely_failing, repetition_flagged, error, data_bits,
  min_entropy, min_entropy_original, min_entropy_bitstring`;

/** A run as the quality page's timeline shows it: bookkeeping plus, when completed, its record. */
export interface RunRow {
  id: number;
  status: RunStatus;
  completedMs: number;
  /** Null for an error run (nothing was tested). */
  record: TestResultRecord | null;
  strictlyFailing: boolean;
  looselyFailing: boolean;
  repetitionFlagged: boolean;
  error: string | null;
  dataBits: number;
}

export class QualityStore {
  private constructor(readonly db: Db) {}

  /** Applies the 'quality' migrations and returns the store. */
  static async open(db: Db): Promise<QualityStore> {
    await db.migrate('quality', QUALITY_MIGRATIONS);
    return new QualityStore(db);
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw err instanceof StorageUnavailableError ? err : new StorageUnavailableError(err);
    }
  }

  /** Stores a run and its kept bits in one transaction: a crash leaves all of it or none. */
  async insertRun(run: NewRun): Promise<number> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const r = run.record;
        const [row] = await tx.query<{ id: number }>(
          `INSERT INTO quality_runs (status, started_ms, completed_ms, source, streams, bits_per_stream,
             tests_passed, nist_all_passed, nist_fails, nist_passes, nist_success_rate,
             uniformity_all_passed, uniformity_fails, uniformity_passes, uniformity_success_rate,
             strictly_failing, loosely_failing, repetition_flagged, error, report, data_bits, data_expires_ms,
             min_entropy, min_entropy_original, min_entropy_bitstring)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
           RETURNING id`,
          [
            run.status, run.startedMs, run.completedMs, run.source, run.streams, run.bitsPerStream,
            r?.tests_passed ?? false, r?.nist_all_passed ?? false, r?.nist_fails ?? 0, r?.nist_passes ?? 0,
            r?.nist_success_rate ?? null, r?.uniformity_all_passed ?? false, r?.uniformity_fails ?? 0,
            r?.uniformity_passes ?? 0, r?.uniformity_success_rate ?? null,
            run.strictlyFailing ?? false, run.looselyFailing ?? false, run.repetitionFlagged ?? false,
            run.error ?? null, JSON.stringify(run.report), run.data?.bits ?? 0, run.data?.expiresMs ?? null,
            run.minEntropy?.assessed ?? null, run.minEntropy?.h_original ?? null, run.minEntropy?.h_bitstring ?? null,
          ],
        );
        const id = Number(row!.id);
        if (run.data && run.data.bits > 0) {
          const bytes = Math.ceil(run.data.bits / 8);
          await tx.execute('INSERT INTO quality_run_data (run_id, data) VALUES ($1, $2)', [
            id,
            Buffer.from(run.data.bytes.buffer, run.data.bytes.byteOffset, bytes),
          ]);
        }
        return id;
      }),
    );
  }

  /** Completed runs, newest first; `filter` picks failing ones. Error runs are never listed here. */
  async listRecords(num: number, filter: 'all' | 'loose' | 'strict'): Promise<ListedRun[]> {
    const where =
      filter === 'all' ? '' : filter === 'loose' ? ' AND loosely_failing = 1' : ' AND strictly_failing = 1';
    const rows = await this.guard(() =>
      this.db.query<StoredRunRow>(
        `SELECT ${LIST_COLUMNS} FROM quality_runs WHERE status = 'completed'${where}
         ORDER BY completed_ms DESC, id DESC LIMIT $1`,
        [num],
      ),
    );
    return rows.map((row) => ({
      id: Number(row.id),
      completedMs: Number(row.completed_ms),
      record: buildRecordFromRow(row),
      dataBits: Number(row.data_bits),
    }));
  }

  /** Newest runs of any status (errors too), for operators. */
  async listRuns(num: number): Promise<RunSummary[]> {
    const rows = await this.guard(() =>
      this.db.query<StoredRunRow>(`SELECT ${LIST_COLUMNS} FROM quality_runs ORDER BY completed_ms DESC, id DESC LIMIT $1`, [num]),
    );
    return rows.map((row) => ({
      id: Number(row.id),
      status: row.status,
      completedMs: Number(row.completed_ms),
      testsPassed: row.status === 'completed' ? Boolean(row.tests_passed) : null,
      strictlyFailing: Boolean(row.strictly_failing),
      looselyFailing: Boolean(row.loosely_failing),
      error: row.error,
      minEntropy:
        row.min_entropy === null || row.min_entropy === undefined
          ? null
          : {
              h_original: Number(row.min_entropy_original),
              h_bitstring: Number(row.min_entropy_bitstring),
              assessed: Number(row.min_entropy),
            },
    }));
  }

  /**
   * Runs of any status completed at or after `sinceMs` (and at or before `untilMs`, when
   * given) with an id above `afterId` (only
   * loosely failing ones with `failing`), oldest first, at most `limit`: the newest ones
   * when more match.
   */
  async listRunRows(filter: { sinceMs?: number; untilMs?: number; afterId?: number; failing?: boolean; limit: number }): Promise<RunRow[]> {
    const rows = await this.guard(() =>
      this.db.query<StoredRunRow>(
        `SELECT ${LIST_COLUMNS} FROM quality_runs WHERE completed_ms >= $1 AND completed_ms <= $2 AND id > $3${filter.failing ? ' AND loosely_failing = 1' : ''}
         ORDER BY completed_ms DESC, id DESC LIMIT $4`,
        [filter.sinceMs ?? 0, filter.untilMs ?? Number.MAX_SAFE_INTEGER, filter.afterId ?? 0, filter.limit],
      ),
    );
    return rows.reverse().map(toRunRow);
  }

  /** One run's row, or undefined. */
  async getRunRow(id: number): Promise<RunRow | undefined> {
    const rows = await this.guard(() => this.db.query<StoredRunRow>(`SELECT ${LIST_COLUMNS} FROM quality_runs WHERE id = $1`, [id]));
    return rows[0] ? toRunRow(rows[0]) : undefined;
  }

  /**
   * Runs stored with an id above `afterId`, counted by outcome (passed: tests_passed;
   * failed: completed without it; error: nothing tested), and the highest id counted.
   */
  async countRunsAfter(afterId: number): Promise<{ maxId: number; passed: number; failed: number; error: number }> {
    const rows = await this.guard(() =>
      this.db.query<{ status: RunStatus; tests_passed: number | boolean | null; runs: number | string; max_id: number | string }>(
        `SELECT status, tests_passed, count(*) AS runs, max(id) AS max_id FROM quality_runs WHERE id > $1 GROUP BY status, tests_passed`,
        [afterId],
      ),
    );
    const counts = { maxId: afterId, passed: 0, failed: 0, error: 0 };
    for (const row of rows) {
      const outcome = row.status === 'error' ? 'error' : Number(row.tests_passed) ? 'passed' : 'failed';
      counts[outcome] += Number(row.runs);
      counts.maxId = Math.max(counts.maxId, Number(row.max_id));
    }
    return counts;
  }

  /** When the oldest stored run completed (ms), or undefined when none is stored. */
  async firstRunMs(): Promise<number | undefined> {
    const rows = await this.guard(() => this.db.query<{ ms: number | string | null }>('SELECT min(completed_ms) AS ms FROM quality_runs'));
    const ms = rows[0]?.ms;
    return ms === null || ms === undefined ? undefined : Number(ms);
  }

  /** The highest run id stored (0 when none): cheap enough to poll for new runs. */
  async maxRunId(): Promise<number> {
    const rows = await this.guard(() => this.db.query<{ id: number | null }>('SELECT max(id) AS id FROM quality_runs'));
    return Number(rows[0]?.id ?? 0);
  }

  /** The stored full report of a run (parsed), or undefined. */
  async getReport(id: number): Promise<Record<string, unknown> | undefined> {
    const rows = await this.guard(() => this.db.query<{ report: string }>('SELECT report FROM quality_runs WHERE id = $1', [id]));
    const text = rows[0]?.report;
    return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
  }

  /** Id of the newest run (any status), or undefined. */
  async latestRunId(): Promise<number | undefined> {
    const rows = await this.guard(() =>
      this.db.query<{ id: number }>('SELECT id FROM quality_runs ORDER BY completed_ms DESC, id DESC LIMIT 1'),
    );
    return rows[0] ? Number(rows[0].id) : undefined;
  }

  /**
   * `length` bytes of a run's kept bits from byte `offset` (fewer at the end; empty when
   * none are kept or the run was pruned meanwhile).
   */
  async readData(id: number, offset: number, length: number): Promise<Buffer> {
    const rows = await this.guard(() =>
      this.db.query<{ piece: Buffer | null }>('SELECT substr(data, $2, $3) AS piece FROM quality_run_data WHERE run_id = $1', [
        id,
        offset + 1,
        length,
      ]),
    );
    const piece = rows[0]?.piece;
    return piece ? Buffer.from(piece) : Buffer.alloc(0);
  }

  /**
   * Deletes runs completed before `recordsBefore` with their bits, and the kept bits of
   * passing runs whose keep time ended before `now`. Returns what was removed.
   */
  async prune(recordsBefore: number, now: number): Promise<{ runs: number; data: number }> {
    return this.guard(() =>
      this.db.transaction(async (tx: Queryable) => {
        let data = await tx.execute(
          'DELETE FROM quality_run_data WHERE run_id IN (SELECT id FROM quality_runs WHERE completed_ms < $1)',
          [recordsBefore],
        );
        const runs = await tx.execute('DELETE FROM quality_runs WHERE completed_ms < $1', [recordsBefore]);
        data += await tx.execute(
          `DELETE FROM quality_run_data WHERE run_id IN
             (SELECT id FROM quality_runs WHERE data_expires_ms IS NOT NULL AND data_expires_ms < $1)`,
          [now],
        );
        await tx.execute(
          'UPDATE quality_runs SET data_bits = 0, data_expires_ms = NULL WHERE data_expires_ms IS NOT NULL AND data_expires_ms < $1',
          [now],
        );
        return { runs, data };
      }),
    );
  }
}
